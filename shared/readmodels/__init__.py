"""Read models: MongoDB projections of the event log, each rebuildable by replaying the log.

``ReadModels`` is the facade services use; ``conversation.evolve`` is the pure fold it is built on.
"""

from shared.readmodels.conversation import BotPresence, ConversationState, PersonaSwitch, evolve, fold
from shared.readmodels.messages import MessageKey, MessageStatus, MessageView, message_doc_id
from shared.readmodels.profiles import BotView, PersonaView
from shared.readmodels.repository import ReadModels

__all__ = [
    "BotPresence",
    "BotView",
    "ConversationState",
    "MessageKey",
    "MessageStatus",
    "MessageView",
    "PersonaSwitch",
    "PersonaView",
    "ReadModels",
    "evolve",
    "fold",
    "message_doc_id",
]

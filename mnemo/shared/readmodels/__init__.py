"""Read models: MongoDB projections of the event log, each rebuildable by replaying the log.

Every read model is declared once in the projection catalog (``catalog.py``: collections, indexes, the events
it folds, its port, adapter and fake). ``ReadModels`` is the conversations' adapter; the pure fold it is built
on is the conversation aggregate's (``mnemo.shared.aggregates.conversation.evolve``).
"""

from mnemo.shared.aggregates.conversation import BotPresence, ConversationState, PersonaSwitch, evolve, fold
from mnemo.shared.readmodels.messages import MessageKey, MessageStatus, MessageView, message_doc_id
from mnemo.shared.readmodels.profiles import BotView, PersonaView
from mnemo.shared.readmodels.repository import ReadModels

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

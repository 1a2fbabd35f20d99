"""Read models: MongoDB projections of the event log, each rebuildable by replaying the log.

``ReadModels`` is the facade services use; ``conversation.evolve`` is the pure fold it is built on.
"""

from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared.crypto import FieldCipher
from mnemo.shared.readmodels.conversation import BotPresence, ConversationState, PersonaSwitch, evolve, fold
from mnemo.shared.readmodels.messages import MessageKey, MessageStatus, MessageView, message_doc_id
from mnemo.shared.readmodels.profiles import BotView, PersonaView
from mnemo.shared.readmodels.repository import ReadModels


async def ensure_all_indexes(db: AsyncDatabase[dict[str, Any]], cipher: FieldCipher) -> None:
    """Create the indexes of every read model in this package (idempotent, any replica may call it). Called
    once when a service opens its core, so no handler needs a first-use check; the indexes serve queries,
    none enforces uniqueness, so a read model also works before they exist. A read model one service owns
    is set up by that service (``ensure_own_indexes`` in its ``app.py``)."""
    from mnemo.shared.readmodels.documents import DocumentsReadModel
    from mnemo.shared.readmodels.knowledge import KnowledgeReadModel
    from mnemo.shared.readmodels.legacy_lore import LegacyLoreReadModel
    from mnemo.shared.readmodels.lore import LoreReadModel
    from mnemo.shared.readmodels.summaries import SummariesReadModel

    await ReadModels(db, cipher).ensure_indexes()
    await SummariesReadModel(db, cipher).ensure_indexes()
    await LoreReadModel(db, cipher).ensure_indexes()
    await KnowledgeReadModel(db, cipher).ensure_indexes()
    await LegacyLoreReadModel(db, cipher).ensure_indexes()
    await DocumentsReadModel(db, cipher).ensure_indexes()


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
    "ensure_all_indexes",
    "evolve",
    "fold",
    "message_doc_id",
]

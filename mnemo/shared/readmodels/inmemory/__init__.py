"""In-memory fakes of the shared read models (the ports in ``ports.py``), for component tests without servers.

Each folds the same events with the same rules as its MongoDB adapter (idempotent on redelivery, version
filters, tenant scoping, ordering of every query) and keeps plain values: nothing is encrypted, which is
the one thing the adapters do that a fake need not. ``tests/contract/test_readmodels_contract.py`` runs one
suite on both, so the two cannot drift.
"""

from typing import TYPE_CHECKING

from mnemo.shared.readmodels.inmemory.conversation import InMemoryReadModels
from mnemo.shared.readmodels.inmemory.knowledge import InMemoryKnowledge
from mnemo.shared.readmodels.inmemory.lore import InMemoryLegacyLore, InMemoryLore
from mnemo.shared.readmodels.inmemory.memories import InMemoryMemories
from mnemo.shared.readmodels.inmemory.summaries import InMemorySummaries

if TYPE_CHECKING:  # each fake satisfies its port (checked by mypy)
    from mnemo.shared.readmodels import ports

    _models: ports.ConversationReadModel = InMemoryReadModels()
    _summaries: ports.SummariesPort = InMemorySummaries()
    _knowledge: ports.KnowledgePort = InMemoryKnowledge()
    _legacy: ports.LegacyLorePort = InMemoryLegacyLore()
    _lore: ports.LorePort = InMemoryLore()
    _memories: ports.MemoriesPort = InMemoryMemories()

__all__ = [
    "InMemoryKnowledge",
    "InMemoryLegacyLore",
    "InMemoryLore",
    "InMemoryMemories",
    "InMemoryReadModels",
    "InMemorySummaries",
]

"""The services: where each one's router factory lives and which shared resources it needs."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from shared.bootstrap import IndexSetup, RouterFactory
from shared.vectors.factory import VectorRole


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    module: str  # `<module>.app` holds create_router(deps)
    vectors: VectorRole | None = None  # its use of the vector index (stream mode: writer or follower's shard)
    embedder: bool = False
    replicas: int = 1  # processes of it in a deployment by default (`make cluster`, docker-compose.yml)

    def router_factory(self) -> RouterFactory:
        factory: RouterFactory = importlib.import_module(f"{self.module}.app").create_router
        return factory

    def own_indexes(self) -> IndexSetup | None:
        """The service's setup of the read models only it owns, if it has any."""
        setup: IndexSetup | None = getattr(importlib.import_module(f"{self.module}.app"), "ensure_own_indexes", None)
        return setup


SERVICES: tuple[ServiceSpec, ...] = (
    ServiceSpec("ingest", "services.ingest", replicas=2),
    ServiceSpec("embedding", "services.embedding", vectors="write", embedder=True, replicas=2),
    ServiceSpec("summarizer", "services.summarizer", embedder=True, replicas=2),
    ServiceSpec("memory-extractor", "services.memory_extractor", embedder=True, replicas=2),
    ServiceSpec("context-assembler", "services.context_assembler", vectors="read", embedder=True, replicas=2),
    ServiceSpec("lore", "services.lore"),
    ServiceSpec("memory", "services.memory", embedder=False),
)


def spec(name: str) -> ServiceSpec:
    for s in SERVICES:
        if s.name == name:
            return s
    raise KeyError(name)

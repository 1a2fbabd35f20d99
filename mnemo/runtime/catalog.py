"""The services the host runs: where each one's definition lives (``<module>.app.DEFINITION``, what it needs)
and how many replicas of it a deployment runs by default."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from mnemo.shared.bootstrap import RouterFactory, ServiceDefinition


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    module: str  # `<module>.app` holds DEFINITION
    replicas: int = 1  # processes of it in a deployment by default (`make cluster`, docker-compose.yml)

    def definition(self) -> ServiceDefinition:
        definition: ServiceDefinition = importlib.import_module(f"{self.module}.app").DEFINITION
        return definition

    def router_factory(self) -> RouterFactory:
        return self.definition().create_router


SERVICES: tuple[ServiceSpec, ...] = (
    ServiceSpec("ingest", "mnemo.services.ingest", replicas=2),
    ServiceSpec("embedding", "mnemo.services.embedding", replicas=2),
    ServiceSpec("summarizer", "mnemo.services.summarizer", replicas=2),
    ServiceSpec("memory-extractor", "mnemo.services.memory_extractor", replicas=2),
    ServiceSpec("context-assembler", "mnemo.services.context_assembler", replicas=2),
    ServiceSpec("lore", "mnemo.services.lore"),
    ServiceSpec("memory", "mnemo.services.memory"),
    ServiceSpec("privacy", "mnemo.services.privacy"),
)


def spec(name: str) -> ServiceSpec:
    for s in SERVICES:
        if s.name == name:
            return s
    raise KeyError(name)

"""Each service declares the read models it projects or reads (``ServiceDefinition.read_models`` in its
``app.py``), and the host hands it those alone (``DeclaredPorts``): a router asking for one it did not declare
would fail at start, and one declared but never asked for would claim more of the database than it touches."""

from __future__ import annotations

from typing import Any, TypeVar

import pytest
from pymongo import AsyncMongoClient

from mnemo.runtime.catalog import SERVICES, ServiceSpec
from mnemo.shared.readmodels.catalog import CATALOG, DeclaredPorts, FakeReadModelPorts, ReadModel
from tests.components import deps

P = TypeVar("P")


class Asked:
    """The ports a router is built with, and the read models it asked for (a fake where there is one)."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self._fakes = FakeReadModelPorts()

    def of(self, model: ReadModel[P]) -> P:
        self.names.add(model.name)
        port: P = self._fakes.of(model) if model.fake is not None else object()  # type: ignore[assignment]
        return port


@pytest.mark.parametrize("spec", SERVICES, ids=lambda s: s.name)
async def test_a_service_declares_exactly_the_read_models_its_router_asks_for(spec: ServiceSpec) -> None:
    definition = spec.definition()
    asked = Asked()
    # A client that never connects: what a router keeps for later (privacy's sweep, the usage report).
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient("mongodb://127.0.0.1:9", connect=False)
    built = deps(db=client["mnemo"], read_models=asked, vectors=object(), embedder=object())
    definition.create_router(built)
    assert asked.names == {m.name for m in definition.read_models}, spec.name
    await client.close()


def test_a_service_gets_no_port_it_did_not_declare() -> None:
    ports = DeclaredPorts(FakeReadModelPorts(), CATALOG[:1], "ingest")
    assert ports.of(CATALOG[0]) is ports.of(CATALOG[0])
    with pytest.raises(LookupError, match="ingest uses the summaries read model without declaring it"):
        ports.of(CATALOG[1])

"""Fixtures several integration suites share: a tenant of the test's own, the bundled model, a field cipher,
a NATS client, a Qdrant Edge index on disk, and the services' stack with such an index."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client as NatsClient

from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.vectors.edge import EdgeVectorIndex
from tests.integration.ingest_stack import StackFactory, running_with_vectors


@pytest.fixture
def tenant() -> str:
    return f"tenant-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def embedder() -> BundledEmbedder:
    return BundledEmbedder()


@pytest.fixture
def cipher() -> FieldCipher:
    return FieldCipher(os.urandom(32), InMemoryKeyStore())


@pytest.fixture
async def nc(nats_url: str) -> AsyncIterator[NatsClient]:
    client = await nats.connect(nats_url)
    yield client
    await client.drain()


@pytest.fixture
async def index(tmp_path: Path) -> AsyncIterator[EdgeVectorIndex]:
    """An empty index of the bundled model's 384 dimensions."""
    idx = EdgeVectorIndex(tmp_path / "qdrant", "ctx")
    await idx.ensure_collection(384)
    yield idx
    await idx.close()


@pytest.fixture
def vector_stack(
    nats_url: str, mongo_url: str, db_name: str, tmp_path: Path, embedder: BundledEmbedder
) -> StackFactory:
    """Starts the given routers with the bundled model and an index of its own (``running_with_vectors``)."""
    return lambda routers: running_with_vectors(nats_url, mongo_url, db_name, routers, tmp_path, embedder)

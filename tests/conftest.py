"""Fixtures that start real servers from the project's own dependencies (and the bundled embedding model).

One nats-server (JetStream) and one SecantusDB server per test session; each test gets its own database
name and its own subject/stream prefix where it needs isolation, so tests do not see each other's data.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from pydantic import SecretStr

from mnemo.runtime.servers import ChildServer, free_port, start_mongo, start_nats
from mnemo.shared.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

# Timed assertions do not belong in tests: on the shared, loaded machines CI runs on, one property test's
# examples can take seconds (a "too slow" health check failed test_log_subject_round_trips at load 21), so
# no property test has a per-example deadline or that health check unless it asks for them itself.
hypothesis_settings.register_profile("mnemo", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("mnemo")


@pytest.fixture(scope="module")
def embedder() -> Any:
    """The bundled embedding model (no server), loaded once a module that asks for it."""
    from mnemo.shared.embedders.bundled import BundledEmbedder

    return BundledEmbedder(batch_size=16)


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChildServer]:
    server = start_nats(tmp_path_factory.mktemp("nats"), port=free_port())
    yield server
    server.stop()


@pytest.fixture(scope="session")
def mongo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChildServer]:
    server = start_mongo(tmp_path_factory.mktemp("mongo"), port=free_port())
    yield server
    server.stop()


@pytest.fixture
def nats_url(nats_server: ChildServer) -> str:
    return nats_server.url


@pytest.fixture
def mongo_url(mongo_server: ChildServer) -> str:
    return mongo_server.url


@pytest.fixture
def db_name() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def core_settings(nats_url: str, mongo_url: str, tmp_path: Path) -> Settings:
    """Settings for ``open_core`` and ``mnemo replay`` on the session's servers: a database, a data directory
    and a key-encryption key of the test's own."""
    return Settings(
        nats_url=nats_url,
        mongodb_url=mongo_url,
        mongodb_db=f"replay_{uuid.uuid4().hex[:10]}",
        data_dir=tmp_path,
        kek=SecretStr(base64.b64encode(os.urandom(32)).decode()),
    )


@pytest.fixture
async def mongo_db(mongo_url: str, db_name: str) -> AsyncIterator[object]:
    """A fresh database on the session's SecantusDB server, dropped afterwards."""
    from pymongo import AsyncMongoClient

    client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(mongo_url)
    try:
        yield client[db_name]
    finally:
        await client.drop_database(db_name)
        await client.close()


def compose_image(service: str) -> str:
    """The image docker-compose.yml pins for ``service``: the contract suites test what deployments run."""
    compose: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    image: str = compose["services"][service]["image"]
    return image


@functools.cache
def docker_engine() -> bool:
    """Whether a Docker engine answers (testcontainers needs one); fails in milliseconds where there is none."""
    try:
        import docker

        docker.from_env(timeout=2).ping()
    except Exception:
        return False
    return True


def real_server(env: str, what: str, container: Callable[[], AbstractContextManager[str]]) -> Iterator[str]:
    """A real server for a contract suite: the URL in ``env``, else one ``container`` starts with testcontainers,
    else skip saying what is missing."""
    url = os.environ.get(env)
    if url:
        yield url
        return
    if not docker_engine():
        pytest.skip(f"needs {what}: set {env}, or a Docker engine for testcontainers (neither here)")
    with container() as started:
        yield started


@contextlib.contextmanager
def mongodb_container() -> Iterator[str]:
    from testcontainers.community.mongodb import MongoDbContainer

    with MongoDbContainer(compose_image("mongo")) as mongo:
        yield mongo.get_connection_url()


@contextlib.contextmanager
def qdrant_container() -> Iterator[str]:
    from testcontainers.community.qdrant import QdrantContainer

    with QdrantContainer(compose_image("qdrant")) as qdrant:
        yield f"http://{qdrant.get_container_host_ip()}:{qdrant.get_exposed_port(6333)}"


@pytest.fixture(scope="session")
def real_mongodb_url() -> Iterator[str]:
    """A real MongoDB for the contract suites, at the version compose pins."""
    yield from real_server("MONGODB_URL", "a real MongoDB", mongodb_container)


@pytest.fixture(scope="session")
def real_qdrant_url() -> Iterator[str]:
    """A real Qdrant server for the vector-index contract suite, at the version compose pins."""
    yield from real_server("QDRANT_URL", "a Qdrant server", qdrant_container)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """`../shared` beside the repository: specs, fixtures and evaluation data, read by path."""
    if not SHARED.exists():
        pytest.skip(f"needs the shared/ folder beside the repository at {SHARED}")
    return SHARED

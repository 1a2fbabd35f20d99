"""Composition root: builds adapters from settings and runs services.

``open_core`` opens what services share (MongoDB, the event log, the cipher, the relay, and optionally
the vector index and embedder); ``deps_for`` adds a service's own broker. Each service declares what it
needs once, as a :class:`ServiceDefinition` in its ``app.py``; :func:`running` runs one on its own core
(``python -m mnemo.services.<name>`` through ``run_service``, the benchmarks), while the embedded stack
(mnemo/runtime/stack.py) opens one core and runs every service on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import logging
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import nats.errors
import nats.js.errors
import pymongo.errors
from faststream.nats import NatsBroker, NatsRouter
from nats.aio.client import Client as NatsClient
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared import natsconn
from mnemo.shared.broker import ensure_streams, make_broker, start_broker
from mnemo.shared.crypto import FieldCipher
from mnemo.shared.deps import Deps
from mnemo.shared.embedders.factory import build_embedder
from mnemo.shared.embedders.port import Embedder
from mnemo.shared.eventlog.codec import EventCodec
from mnemo.shared.eventlog.keystore import MongoKeyStore
from mnemo.shared.eventlog.mongo import MongoEventStore
from mnemo.shared.eventlog.relay import NatsJetStreamPublisher, Relay
from mnemo.shared.events.recorded import REGISTRY
from mnemo.shared.heap import start_heap_frozen
from mnemo.shared.jetstream import jetstream
from mnemo.shared.keys import LocalKek, load_or_create_kek, parse_kek, read_kek_file
from mnemo.shared.llm.factory import build_chat_model
from mnemo.shared.llm.port import ChatModel
from mnemo.shared.logs import configure_logging as configure_logging  # the services' and the gateway's
from mnemo.shared.metrics import BUILD_INFO
from mnemo.shared.probes import Probes, probe_server
from mnemo.shared.readiness import watch_brokers, watch_mongodb, watch_nats, watch_vectors
from mnemo.shared.readmodels.catalog import DeclaredPorts, MongoReadModelPorts, ReadModel, ensure_indexes
from mnemo.shared.settings import Settings
from mnemo.shared.tasks import stopped
from mnemo.shared.usage import USAGE, ensure_usage_indexes
from mnemo.shared.vectors.factory import VectorRole, open_vector_index
from mnemo.shared.vectors.follower import PointsFollower
from mnemo.shared.vectors.port import VectorIndex

log = logging.getLogger(__name__)

RouterFactory = Callable[[Deps], NatsRouter]


@dataclass(frozen=True)
class ServiceDefinition:
    """What a service is and needs, declared once in its ``app.py`` (``DEFINITION``): the host, the
    service's own ``__main__`` and the benchmarks all run it from this."""

    name: str  # as in the subjects, durables and queue groups: ``memory-extractor``
    create_router: RouterFactory
    vectors: bool | VectorRole = False  # its use of the vector index (stream mode: writer or follower's shard)
    embedder: bool = False
    #: The read models it projects or reads (the projection catalog's entries): its Deps hands out their ports
    #: and no others (``DeclaredPorts``), so this line is the whole of what it touches in the database.
    read_models: tuple[ReadModel[Any], ...] = ()


def resolve_kek(settings: Settings) -> LocalKek:
    """The KEK from ``MNEMO_KEK``, else the file ``MNEMO_KEK_FILE``, else (embedded mode) ``data_dir/kek.b64``,
    created on first use; with the KEKs being retired (``MNEMO_KEK_PREVIOUS``) accepted for unwrapping. A KMS
    adapter would implement ``mnemo.shared.keys.KeyWrapper`` instead."""
    if settings.kek is not None:
        kek = parse_kek(settings.kek.get_secret_value())
    elif settings.kek_file is not None:
        kek = read_kek_file(settings.kek_file)
    else:
        kek = load_or_create_kek(settings.data_dir)
    previous = settings.kek_previous.get_secret_value().split(",") if settings.kek_previous else []
    return LocalKek(kek, [parse_kek(p.strip()) for p in previous if p.strip()])


@dataclass
class Core:
    settings: Settings
    mongo: AsyncMongoClient[dict[str, Any]]
    db: AsyncDatabase[dict[str, Any]]
    cipher: FieldCipher
    codec: EventCodec
    store: MongoEventStore
    nc: NatsClient
    relay: Relay
    vectors: VectorIndex | None
    embedder: Embedder | None
    chat_model: ChatModel | None
    follower: PointsFollower | None = None  # stream mode: this process's shard follower (read-your-writes)

    async def close(self) -> None:
        await self.relay.stop()
        if self.chat_model is not None:
            await self.chat_model.close()
        if self.embedder is not None:
            await self.embedder.close()
        if self.vectors is not None:
            await self.vectors.close()
        with contextlib.suppress(Exception):
            await self.nc.drain()
        await self.mongo.close()


async def open_core(settings: Settings, *, vectors: bool | VectorRole = False, embedder: bool = False) -> Core:
    """``vectors``: what the process does with the vector index (``True``: both read and write, ``False``: no
    index); in stream mode it selects the writer or a follower's shard (``mnemo/shared/vectors/factory.py``)."""
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(settings.mongodb_url, tz_aware=True)
    async with contextlib.AsyncExitStack() as opened_so_far:  # a start that fails half way closes what it opened
        opened_so_far.push_async_callback(mongo.close)
        db = mongo[settings.mongodb_db]
        keys = MongoKeyStore(db)
        await keys.ensure_indexes()
        cipher = FieldCipher(resolve_kek(settings), keys, cache_seconds=settings.key_cache_seconds)
        codec = EventCodec(REGISTRY, cipher)
        store = MongoEventStore(db, codec)
        await store.ensure_indexes()
        await ensure_indexes(db)
        await ensure_usage_indexes(db)
        nc = await natsconn.connect(settings, name=f"mnemo-{settings.service_name}-relay", max_reconnect_attempts=-1)
        opened_so_far.push_async_callback(nc.close)
        js = jetstream(nc)
        await ensure_streams(js, settings.streams)
        relay = Relay(store, NatsJetStreamPublisher(js), codec)
        index: VectorIndex | None = None
        follower: PointsFollower | None = None
        emb: Embedder | None = None
        if embedder:
            emb = build_embedder(settings)
        if vectors:
            opened = await open_vector_index(settings, nc, "both" if vectors is True else vectors)
            index, follower = opened.index, opened.follower
        chat = build_chat_model(settings)
        opened_so_far.pop_all()  # opened: the core closes them from now on
        return Core(settings, mongo, db, cipher, codec, store, nc, relay, index, emb, chat, follower)


def deps_for(core: Core, broker: NatsBroker, service: ServiceDefinition) -> Deps:
    return Deps(
        read_models=DeclaredPorts(MongoReadModelPorts(core.db, core.cipher), service.read_models, service.name),
        settings=core.settings,
        broker=broker,
        db=core.db,
        store=core.store,
        codec=core.codec,
        publisher=core.relay,
        cipher=core.cipher,
        nc=core.nc,
        vectors=core.vectors,
        embedder=core.embedder,
        chat_model=core.chat_model,
        vectors_caught_up=core.follower.caught_up if core.follower is not None else None,
    )


async def wait_for_stop_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


@dataclass
class Running:
    core: Core
    broker: NatsBroker


def watch_core(probes: Probes, core: Core) -> None:
    """The readiness checks of what a core opened (``mnemo.shared.readiness``)."""
    watch_nats(probes, core.nc)
    watch_mongodb(probes, core.db)
    if core.vectors is not None:
        watch_vectors(probes, core.vectors, core.follower)


@contextlib.asynccontextmanager
async def running(
    service: ServiceDefinition, settings: Settings, probes: Probes | None = None
) -> AsyncIterator[Running]:
    """``service`` on its own core and broker, with the relay's recovery loop; on exit in-flight messages
    drain before everything closes. ``probes``: what the process's probe server reports, brought up to date as
    the service starts and stops."""
    probes = probes or Probes()
    core = await open_core(settings, vectors=service.vectors, embedder=service.embedder)
    watch_core(probes, core)
    broker = make_broker(settings, service.name)
    deps = deps_for(core, broker, service)
    deps.probes = probes
    broker.include_router(service.create_router(deps))
    relay_task = asyncio.create_task(core.relay.run())
    usage_task = asyncio.create_task(USAGE.run(core.db))  # per-tenant usage counts, flushed to the database
    try:
        await start_broker(broker)
        for begin in deps.on_started:
            await begin()
    except BaseException:  # a start that failed half way closes what it opened, so it can be tried again
        await _stop(deps, broker, relay_task, usage_task, core)
        raise
    watch_brokers(probes, [broker])
    probes.phase = "serving"
    try:
        with start_heap_frozen():
            yield Running(core, broker)
    finally:
        probes.phase = "stopping"
        await _stop(deps, broker, relay_task, usage_task, core)


async def _stop(
    deps: Deps, broker: NatsBroker, relay_task: asyncio.Task[None], usage_task: asyncio.Task[None], core: Core
) -> None:
    for stop in deps.on_stopping:
        with contextlib.suppress(Exception):  # one part that cannot stop cleanly does not keep the rest open
            await stop()
    await broker.stop()
    for task in (relay_task, usage_task):  # the usage task flushes once more as it stops
        await stopped(task)
    await core.close()


async def serve(service: ServiceDefinition) -> None:
    """Run one service until SIGINT/SIGTERM, then drain in-flight work and close everything."""
    settings = Settings(service_name=service.name)
    BUILD_INFO.labels(version=mnemo_version(), service=service.name).set(1)
    probes = Probes()
    async with probe_server(settings.observe, probes) as url:
        log.info("%s probes on %s (/healthz, /readyz, /metrics)", service.name, url)
        await _serve_until_stopped(service, settings, probes)


def mnemo_version() -> str:
    try:
        return importlib.metadata.version("mnemo")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


async def _serve_until_stopped(service: ServiceDefinition, settings: Settings, probes: Probes) -> None:
    async with contextlib.AsyncExitStack() as stack:
        await start_with_retries(stack, service, settings, probes)
        log.info("%s serving on %s", service.name, settings.nats_url)
        await wait_for_stop_signal()
        log.info("%s stopping: draining in-flight messages", service.name)


#: What a start can meet while a cluster is still electing its leaders or a node is loaded, and heals by itself.
TRANSIENT_START_ERRORS: tuple[type[BaseException], ...] = (
    TimeoutError,  # nats.errors.TimeoutError too: a JetStream API request that got no answer in time
    nats.errors.NoRespondersError,
    nats.js.errors.ServiceUnavailableError,
    pymongo.errors.ConnectionFailure,
)


def transient(exc: BaseException) -> bool:
    """A :data:`TRANSIENT_START_ERRORS` error, or one raised from it: an adapter that wraps the timeout in its
    own error (the stream vector index's ``VectorIndexUnavailable: cannot declare MNEMO_POINTS: nats: timeout``
    stopped an embedding replica's start in a loaded CI-like run, 2026-11-27) is as transient as the timeout."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, TRANSIENT_START_ERRORS):
            return True
        seen.add(id(cause))
        cause = cause.__cause__
    return False


async def start_with_retries(
    stack: contextlib.AsyncExitStack,
    service: ServiceDefinition,
    settings: Settings,
    probes: Probes,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> Running:
    """Enter ``running(service)`` on ``stack``, trying again (backoff 0.5 s doubling to 10 s) while the start
    fails on a :data:`TRANSIENT_START_ERRORS` error, for ``settings.start_timeout_seconds`` in all. Why: a
    replica started beside three others on a busy cluster once met a 5 s JetStream API timeout and exited,
    leaving its partitions to the rest; a process manager would restart it, ``make cluster`` does not. The
    probes stay "starting" (not ready) meanwhile."""
    deadline = clock() + settings.start_timeout_seconds
    delay = 0.5
    while True:
        try:
            return await stack.enter_async_context(running(service, settings, probes))
        except Exception as exc:
            if not transient(exc) or clock() + delay > deadline:
                raise
            log.warning("%s could not start (%r); trying again in %.1f s", service.name, exc, delay)
            await sleep(delay)
            delay = min(delay * 2, 10.0)


def run_service(service: ServiceDefinition) -> None:
    configure_logging(service=service.name)
    asyncio.run(serve(service))

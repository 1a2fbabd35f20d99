"""The least-privilege NATS users (``mnemo/runtime/nats_auth.py``) on a real nats-server secured as ``--secure`` does
it (TLS, a password per user): each denial the threat model relies on, next to what the same user may do.

- The platform publishes chat events and calls RPCs, but cannot read the log or the dead letters (neither by
  subscribing nor through a JetStream consumer or a direct get), nor another client's inbox.
- ingest cannot answer context requests; a service cannot publish to another's subjects (another service's
  dead letters, the platform's chat events, the vector points) nor pull another service's durable.
- Without a password, or over plain TCP, the server refuses the connection.
- The shipped ``deploy/nats-auth.conf`` works as it is, its passwords from the environment.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from pathlib import Path

import nats
import nats.errors
import pytest
from pydantic import SecretStr

from mnemo.runtime.nats_auth import PLATFORM, env_name, grants
from mnemo.runtime.servers import free_port, start_nats
from mnemo.services.context_assembler import index_status
from mnemo.shared import natsconn, subjects
from mnemo.shared.natsconn import connect_options
from mnemo.shared.settings import NatsSettings, Settings
from mnemo.shared.streams import ensure_streams
from tests.integration.secured import SecuredNats, connected, start_secured
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredNats]:
    yield from start_secured(tmp_path_factory.mktemp("secured-nats"))


@pytest.fixture
async def streams(secured: SecuredNats) -> None:
    async with connected(secured, "admin") as admin:
        await ensure_streams(admin.nc.jetstream())


async def test_the_platform_publishes_chat_but_cannot_read_the_log_or_the_dead_letters(
    secured: SecuredNats, streams: None
) -> None:
    async with connected(secured, "platform") as platform, connected(secured, "admin") as admin:
        js = platform.nc.jetstream(timeout=2)
        ack = await js.publish(subjects.BOT_UPSERTED, json.dumps({"tenant_id": "t"}).encode())
        assert ack.stream == subjects.CHAT_STREAM  # allowed: chat in, its PubAck back on its own inbox
        await admin.nc.jetstream().publish(subjects.log_subject("message.recorded"), b"ciphertext")
        platform.allowed()

        await platform.nc.subscribe(subjects.LOG_ALL)
        await platform.denied(f'Subscription to "{subjects.LOG_ALL}"')
        await platform.nc.subscribe(subjects.DLQ_ALL)
        await platform.denied(f'Subscription to "{subjects.DLQ_ALL}"')
        await platform.nc.subscribe("_INBOX.>")  # the services' inboxes carry their JetStream deliveries
        await platform.denied('Subscription to "_INBOX.>"')
        with pytest.raises(nats.errors.TimeoutError):  # a consumer of its own on the log: no API for it
            await js.pull_subscribe(subjects.LOG_ALL, durable="spy", stream=subjects.LOG_STREAM)
        await platform.denied(f'Publish to "$JS.API.CONSUMER.INFO.{subjects.LOG_STREAM}.spy"')
        with pytest.raises(nats.errors.TimeoutError):
            await js.get_last_msg(subjects.LOG_STREAM, subjects.log_subject("message.recorded"))
        await platform.denied(f'Publish to "$JS.API.STREAM.MSG.GET.{subjects.LOG_STREAM}"')
        await platform.nc.publish(subjects.log_subject("message.recorded"), b"forged")  # nor write it
        await platform.denied(f'Publish to "{subjects.log_subject("message.recorded")}"')


async def test_ingest_cannot_answer_context_requests(secured: SecuredNats) -> None:
    async with connected(secured, "ingest") as ingest, connected(secured, "context-assembler") as assembler:
        await ingest.nc.subscribe(subjects.CONTEXT_ASSEMBLE, queue="mnemo_ingest")
        await ingest.denied(f'Subscription to "{subjects.CONTEXT_ASSEMBLE}"')
        await ingest.nc.subscribe(subjects.LORE_IMPORT)
        await ingest.denied(f'Subscription to "{subjects.LORE_IMPORT}"')

        async def answer(msg: nats.aio.msg.Msg) -> None:
            await msg.respond(b'{"context": "from the assembler"}')

        await assembler.nc.subscribe(
            subjects.CONTEXT_ASSEMBLE, queue=subjects.queue_group("context-assembler"), cb=answer
        )
        await assembler.nc.flush()
        async with connected(secured, "platform") as platform:
            reply = await platform.nc.request(subjects.CONTEXT_ASSEMBLE, b"{}", timeout=5)
        assert json.loads(reply.data) == {"context": "from the assembler"}  # the responder may answer
        assembler.allowed()
        await assembler.nc.publish("_INBOX.platform.not-a-request", b"x")  # but not publish to an inbox at will
        await assembler.denied('Publish to "_INBOX.platform.not-a-request"')


async def test_a_service_cannot_publish_to_another_services_subjects(secured: SecuredNats, streams: None) -> None:
    async with connected(secured, "ingest") as ingest, connected(secured, "summarizer") as summarizer:
        await ingest.nc.jetstream().publish(subjects.dead_letter_subject("ingest"), b"own dead letter")
        await ingest.nc.jetstream().publish(subjects.log_subject("message.recorded"), b"relayed")
        ingest.allowed()
        await ingest.nc.publish(subjects.dead_letter_subject("embedding"), b"x")
        await ingest.denied(f'Publish to "{subjects.dead_letter_subject("embedding")}"')
        await ingest.nc.publish(subjects.MESSAGE_CREATED, b"{}")  # forging the platform's input
        await ingest.denied(f'Publish to "{subjects.MESSAGE_CREATED}"')
        await summarizer.nc.publish(subjects.point_subject("p1"), b"x")  # the embedding service's points
        await summarizer.denied(f'Publish to "{subjects.point_subject("p1")}"')
        await summarizer.nc.publish(subjects.CONTEXT_ASSEMBLE, b"{}")  # services call no RPCs
        await summarizer.denied(f'Publish to "{subjects.CONTEXT_ASSEMBLE}"')
        next_ingest = f"$JS.API.CONSUMER.MSG.NEXT.{subjects.CHAT_STREAM}.{subjects.partition_durable(16, 0)}"
        await summarizer.nc.publish(next_ingest, b"1")  # pulling one of ingest's partition durables
        await summarizer.denied(f'Publish to "{next_ingest}"')
        await summarizer.nc.subscribe(subjects.LOG_ALL)  # consumers read through JetStream, not core NATS
        await summarizer.denied(f'Subscription to "{subjects.LOG_ALL}"')


async def test_the_context_assembler_reads_the_embedding_backlog_but_cannot_pull_it(
    secured: SecuredNats, streams: None
) -> None:
    """memory.index_status's `pending` on a --secure deployment: the embedding durable's info, nothing more."""
    async with connected(secured, "embedding") as embedding, connected(secured, "context-assembler") as assembler:
        durable = index_status.EMBEDDING_DURABLE
        await embedding.nc.jetstream().pull_subscribe(subjects.LOG_ALL, durable=durable, stream=subjects.LOG_STREAM)
        before = await embedding.nc.jetstream().consumer_info(subjects.LOG_STREAM, durable)
        async with connected(secured, "admin") as admin:
            for _ in range(3):
                await admin.nc.jetstream().publish(subjects.log_subject("message.recorded"), b"ciphertext")

        backlog = await index_status.jetstream_backlog(lambda: assembler.nc.jetstream())()

        assert backlog == int(before.num_pending or 0) + int(before.num_ack_pending or 0) + 3
        assembler.allowed()
        await assembler.nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{subjects.LOG_STREAM}.{durable}", b"1")
        await assembler.denied(f'Publish to "$JS.API.CONSUMER.MSG.NEXT.{subjects.LOG_STREAM}.{durable}"')
        summarizer_info = f"$JS.API.CONSUMER.INFO.{subjects.LOG_STREAM}.{subjects.durable('summarizer')}"
        await assembler.nc.publish(summarizer_info, b"")
        await assembler.denied(f'Publish to "{summarizer_info}"')


async def test_no_password_or_no_tls_no_connection(secured: SecuredNats) -> None:
    options = connect_options(secured.settings("platform"))
    with pytest.raises(Exception, match=r"(?i)authorization"):
        await nats.connect(secured.url, tls=options["tls"], allow_reconnect=False, max_reconnect_attempts=0)
    wrong = {**options, "password": "not-the-password"}
    with pytest.raises(Exception, match=r"(?i)authorization"):
        await nats.connect(secured.url, **wrong, allow_reconnect=False, max_reconnect_attempts=0)
    plain = {k: v for k, v in options.items() if k != "tls"}
    with pytest.raises(Exception):  # noqa: B017, PT011 - the server requires TLS: nats-py fails the handshake
        await nats.connect(secured.url, **plain, allow_reconnect=False, max_reconnect_attempts=0)
    untrusted = ssl.create_default_context()  # the system's CAs: they did not sign the server's certificate
    with pytest.raises(Exception):  # noqa: B017, PT011
        await nats.connect(
            secured.url, **{**options, "tls": untrusted}, allow_reconnect=False, max_reconnect_attempts=0
        )


async def test_the_shipped_configuration_reads_each_password_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """deploy/nats-auth.conf as deploy/nats-secure.conf includes it: the passwords from MNEMO_NATS_PASSWORD_*."""
    (tmp_path / "nats-auth.conf").write_text((ROOT / "deploy" / "nats-auth.conf").read_text())
    for user in grants():
        monkeypatch.setenv(env_name(user), f"pw-of-{user}")
    server = start_nats(tmp_path, port=free_port(), extra_config="include ./nats-auth.conf\n")
    try:
        settings = Settings(nats_url=server.url, nats=NatsSettings(password=SecretStr("pw-of-platform")))
        errors: list[str] = []

        async def on_error(exc: Exception) -> None:
            errors.append(str(exc))

        nc = await natsconn.connect(settings, PLATFORM, error_cb=on_error)
        try:
            await nc.subscribe(subjects.LOG_ALL)
            await nc.flush()
            await wait_until(lambda: any("permissions violation" in e.lower() for e in errors), "the denial", 10)
        finally:
            await nc.close()
        wrong = Settings(nats_url=server.url, nats=NatsSettings(password=SecretStr("pw-of-ingest")))
        with pytest.raises(Exception, match=r"(?i)authorization"):
            await natsconn.connect(wrong, PLATFORM, allow_reconnect=False, max_reconnect_attempts=0)
    finally:
        server.stop()

"""The Python client's delivery guarantees against a real nats-server of the test's own: events are retried
until JetStream acknowledges them (through a missing stream and a server restart), the buffer is bounded,
retries carry the same Nats-Msg-Id so JetStream keeps one copy, and no responder is an ``Unavailable``."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import nats
import pytest
from nats.js.api import StreamConfig

from mnemo.runtime.servers import free_port, start_nats
from mnemo.shared import subjects
from mnemo_client import BufferFull, MessageCreated, MnemoClient, Unavailable

pytestmark = [pytest.mark.integration]


def message(i: int) -> MessageCreated:
    return MessageCreated(
        tenant_id="t1",
        user_id="u1",
        conversation_id="c1",
        message_id=f"m{i}",
        role="user",
        content=f"line {i}",
        created_at=datetime(2026, 11, 1, 18, i, tzinfo=UTC),
    )


async def create_chat_stream(url: str) -> None:
    nc = await nats.connect(url)
    try:
        await nc.jetstream().add_stream(
            StreamConfig(
                name=subjects.CHAT_STREAM,
                subjects=list(subjects.CHAT_STREAM_SUBJECTS),
                duplicate_window=subjects.DUPLICATE_WINDOW_S,
            )
        )
    finally:
        await nc.drain()


async def stored_ids(url: str) -> list[str]:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        info = await js.stream_info(subjects.CHAT_STREAM)
        ids = []
        for seq in range(1, info.state.last_seq + 1):
            msg = await js.get_msg(subjects.CHAT_STREAM, seq)
            ids.append((msg.headers or {}).get("Nats-Msg-Id", ""))
        return ids
    finally:
        await nc.drain()


async def test_buffered_events_wait_for_a_stream_and_are_kept_once(tmp_path: Path) -> None:
    server = start_nats(tmp_path, port=free_port())
    try:
        client = await MnemoClient.connect(server.url, ack_timeout=0.5, buffer_size=100)
        try:
            for i in range(5):
                client.submit(message(i))
            client.submit(message(0))  # the platform retried an event: same Nats-Msg-Id
            await asyncio.sleep(1.0)  # no stream yet: JetStream has no responder, the client keeps retrying
            assert client.buffered == 6
            await create_chat_stream(server.url)
            async with asyncio.timeout(60):
                await client.flush()
            assert client.buffered == 0
        finally:
            await client.close()
        ids = await stored_ids(server.url)
        assert ids == [f"chat.message.created:t1:c1:m{i}" for i in range(5)]
    finally:
        server.stop()


async def test_events_submitted_during_a_server_outage_land_after_it(tmp_path: Path) -> None:
    port = free_port()
    server = start_nats(tmp_path, port=port)
    await create_chat_stream(server.url)
    client = await MnemoClient.connect(server.url, ack_timeout=0.5, reconnect_time_wait=0.2)
    try:
        await client.publish(message(0))
        server.stop()
        for i in range(1, 4):
            client.submit(message(i))
        await asyncio.sleep(1.0)
        assert client.buffered == 3
        server = start_nats(tmp_path, port=port)  # same store: the stream and message 0 are still there
        async with asyncio.timeout(60):
            await client.flush()
    finally:
        await client.close()
    try:
        assert await stored_ids(server.url) == [f"chat.message.created:t1:c1:m{i}" for i in range(4)]
    finally:
        server.stop()


async def test_the_buffer_is_bounded_and_unacknowledged_publishes_give_up_when_told(tmp_path: Path) -> None:
    server = start_nats(tmp_path, port=free_port())  # no stream: nothing is ever acknowledged
    try:
        client = await MnemoClient.connect(server.url, ack_timeout=0.2, buffer_size=2)
        try:
            client.submit(message(0))
            client.submit(message(1))
            with pytest.raises(BufferFull) as full:
                client.submit(message(2))
            assert full.value.code == "unavailable"
            with pytest.raises(Unavailable, match="not acknowledged"):
                await client.publish(message(3), give_up_after=1.0)
            with pytest.raises(Unavailable) as no_service:
                await client.context("t1", "u1", "c1", "maren")
            assert no_service.value.code == "unavailable"
            assert no_service.value.subject == subjects.CONTEXT_ASSEMBLE
        finally:
            with pytest.raises(TimeoutError):  # closing waits for the buffer, which can never drain here
                await client.close(flush_timeout=0.5)
    finally:
        server.stop()

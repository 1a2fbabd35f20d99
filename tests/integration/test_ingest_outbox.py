"""Ingest's appends and the outbox relay when SecantusDB goes away mid-append, on the real nats-server and SecantusDB.

``make chaos`` (2026-11-28 00:25 UTC) lost two messages this way: as SecantusDB was killed, ingest's insert
committed but the driver saw the connection close; the batch was retried in place, the retry found the message
already recorded (a duplicate: nothing committed, nothing published), and the event stayed held as "this
process's fast path still in flight" for ``grace_s``: no consumer saw it before the run counted the points.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from pymongo.errors import AutoReconnect

from mnemo.services.ingest.app import create_router
from mnemo.services.ingest.recorder import Recorder
from mnemo.shared import subjects
from mnemo.shared.eventlog.relay import MSG_ID_HEADER, NatsJetStreamPublisher, Relay
from mnemo.shared.events.recorded import conversation_stream
from mnemo.shared.readmodels import ReadModels
from mnemo_client.wire.contract import MessageCreated
from tests.integration.ingest_stack import Stack, message_created, running

pytestmark = pytest.mark.integration


@pytest.fixture
async def stack(nats_url: str, mongo_url: str, db_name: str) -> AsyncIterator[Stack]:
    async with running(nats_url, mongo_url, db_name, create_router) as s:
        yield s


async def test_a_message_whose_append_failed_after_its_commit_is_published_by_the_next_recovery_round(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder(stack.store, ReadModels(stack.db, stack.deps.cipher), stack.deps.saver)
    command = MessageCreated.model_validate(message_created("m0", "hello", datetime(2024, 5, 1, tzinfo=UTC)))
    insert_many = stack.store.events.insert_many

    async def insert_then_lose_the_connection(*args: Any, **kwargs: Any) -> Any:
        await insert_many(*args, **kwargs)
        raise AutoReconnect("connection closed")  # the insert is journaled; its reply never came

    monkeypatch.setattr(stack.store.events, "insert_many", insert_then_lose_the_connection)
    with pytest.raises(AutoReconnect):
        await recorder.record([command])
    monkeypatch.undo()
    assert await recorder.record([command]) == [None]  # the consumer's retry in place: already recorded

    [event] = await stack.store.read_stream(conversation_stream("t1", "u1", "c1"))
    # The appending process's own recovery round (grace_s as in production), past min_age_s.
    relay = Relay(stack.store, NatsJetStreamPublisher(stack.js), stack.codec, min_age_s=0.0)
    assert await relay.recover_once() == 1

    relayed = await stack.js.get_last_msg(subjects.LOG_STREAM, subjects.log_subject("message.recorded"))
    assert (relayed.headers or {}).get(MSG_ID_HEADER) == event.event_id
    assert await stack.store.unpublished(0, 10) == []

"""Stream limits from settings (``MNEMO_STREAMS__<STREAM>__*``) on a nats-server of the test's own: a new stream
gets them; a start never changes what an operator set by hand (the difference is logged), and only adds what a
stream lacks (a limit an older version never set, a subject)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client as NatsClient
from nats.js.api import StreamConfig

from mnemo.runtime.servers import free_port, start_nats
from mnemo.shared import subjects
from mnemo.shared.settings import StreamLimits, StreamsSettings
from mnemo.shared.streams import ensure_points_stream, ensure_streams

DAY = 86_400.0
SETTINGS = StreamsSettings(log=StreamLimits(max_age_s=2 * DAY, max_bytes=50_000_000, max_msgs=100_000))


@pytest.fixture
async def nc(tmp_path: Path) -> AsyncIterator[NatsClient]:
    server = start_nats(tmp_path, port=free_port())
    client = await nats.connect(server.url)
    try:
        yield client
    finally:
        await client.close()
        server.stop()


async def config(nc: NatsClient, stream: str) -> StreamConfig:
    return (await nc.jetstream().stream_info(stream)).config


async def test_a_new_stream_gets_the_limits_of_the_settings(nc: NatsClient) -> None:
    await ensure_streams(nc.jetstream(), SETTINGS)
    await ensure_points_stream(nc.jetstream(), SETTINGS)
    log = await config(nc, subjects.LOG_STREAM)
    assert (log.max_age, log.max_bytes, log.max_msgs) == (2 * DAY, 50_000_000, 100_000)
    chat, dlq, points = [
        await config(nc, s) for s in (subjects.CHAT_STREAM, subjects.DLQ_STREAM, subjects.POINTS_STREAM)
    ]
    assert (chat.max_age, chat.max_bytes) == (7 * DAY, -1)  # the defaults: a week of chat, a month of dead letters
    assert dlq.max_age == 30 * DAY
    assert (points.max_age, points.max_msgs_per_subject, points.deny_delete) == (0, 1, True)  # kept forever


async def test_a_start_keeps_what_an_operator_set_and_logs_the_difference(
    nc: NatsClient, caplog: pytest.LogCaptureFixture
) -> None:
    js = nc.jetstream()
    await ensure_streams(js, SETTINGS)
    edited = (await config(nc, subjects.LOG_STREAM)).evolve(max_age=3600.0, max_msgs=-1)
    await js.update_stream(edited)  # the operator: one hour, and no message cap

    with caplog.at_level(logging.WARNING, logger="mnemo.shared.streams"):
        await ensure_streams(js, SETTINGS)  # the next start
    log = await config(nc, subjects.LOG_STREAM)
    assert log.max_age == 3600.0  # the operator's value stays
    assert log.max_bytes == 50_000_000
    # "no cap" is JetStream's unset value: indistinguishable from a stream an older version made, so it is filled
    assert log.max_msgs == 100_000
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"stream {subjects.LOG_STREAM}: max_age is 3600.0 on the server, {2 * DAY!r} in the settings; "
        "keeping the server's (change it there: nats stream edit)"
    ]


async def test_a_stream_of_an_older_version_gets_what_it_lacks(
    nc: NatsClient, caplog: pytest.LogCaptureFixture
) -> None:
    js = nc.jetstream()
    old = ["mnemo.chat.message.>", "mnemo.chat.bot.>"]  # narrower subjects, no limits
    await js.add_stream(StreamConfig(name=subjects.CHAT_STREAM, subjects=old))
    with caplog.at_level(logging.WARNING, logger="mnemo.shared.streams"):
        await ensure_streams(js, SETTINGS)
    chat = await config(nc, subjects.CHAT_STREAM)
    assert chat.subjects == ["mnemo.chat.>"]
    assert chat.max_age == 7 * DAY
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []

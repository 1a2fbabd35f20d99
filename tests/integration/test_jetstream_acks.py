"""Async publishes are settled by JetStream's answers only (mnemo/shared/jetstream.py), on a real nats-server.

A plain subscriber stands in for the stream and answers each publish the ways a JetStream server can: a PubAck,
a status without a body (408 while a leader moves), an error object. nats-py's own handler raises inside its
reader task on the last two and leaves the future pending; ours fails the future with the server's reason.
Another subscriber's reply (FastStream's empty answer) arriving before the PubAck is not taken for it. A run of
publishes with free slots goes to the socket in one write; with every slot taken, the caller's stall bound holds.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator

import nats
import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js.errors import APIError, NoStreamResponseError, TooManyStalledMsgsError

from mnemo.shared.jetstream import jetstream

pytestmark = pytest.mark.integration


@pytest.fixture
async def nc(nats_url: str) -> AsyncIterator[NatsClient]:
    client = await nats.connect(nats_url)
    try:
        yield client
    finally:
        await client.drain()


async def impostor(
    nc: NatsClient, subject: str, body: bytes, headers: dict[str, str] | None, *, first: bytes | None = None
) -> None:
    """Answer every publish on ``subject`` with ``body`` and ``headers``, as a stream would with its PubAck;
    ``first``, when given, is sent before it, as a core subscriber's reply that beats the stream's."""

    async def answer(msg: Msg) -> None:
        if first is not None:
            await nc.publish(msg.reply, first)
        await nc.publish(msg.reply, body, headers=headers)

    await nc.subscribe(subject, cb=answer)
    await nc.flush()


@pytest.mark.parametrize(
    ("body", "headers", "code"),
    [
        (b"", {"Status": "408", "Description": "Request Timeout"}, 408),
        (json.dumps({"error": {"code": 503, "err_code": 10008, "description": "stream offline"}}).encode(), None, 503),
    ],
    ids=["status-without-body", "error-object"],
)
async def test_a_refused_publish_fails_its_future_with_the_reason(
    nc: NatsClient, body: bytes, headers: dict[str, str] | None, code: int, caplog: pytest.LogCaptureFixture
) -> None:
    subject = f"acks.{uuid.uuid4().hex}"
    await impostor(nc, subject, body, headers)
    with caplog.at_level(logging.ERROR):
        ack = await jetstream(nc).publish_async(subject, b"event")
        with pytest.raises(APIError) as refused:
            await asyncio.wait_for(ack, 5)
    assert refused.value.code == code
    assert not [r for r in caplog.records if r.exc_info], "the refusal escaped into nats-py's reader task"


async def test_a_pub_ack_is_read_as_before(nc: NatsClient) -> None:
    subject = f"acks.{uuid.uuid4().hex}"
    await impostor(nc, subject, json.dumps({"stream": "S", "seq": 7}).encode(), None)
    ack = await asyncio.wait_for(await jetstream(nc).publish_async(subject, b"event"), 5)
    assert (ack.stream, ack.seq) == ("S", 7)


@pytest.mark.parametrize("first", [b"", b"ok", b"[1]", b'{"answer": 42}'], ids=["empty", "text", "list", "object"])
async def test_another_subscribers_reply_is_not_taken_for_the_pub_ack(
    nc: NatsClient, first: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    subject = f"acks.{uuid.uuid4().hex}"
    await impostor(nc, subject, json.dumps({"stream": "S", "seq": 8}).encode(), None, first=first)
    with caplog.at_level(logging.ERROR):
        ack = await asyncio.wait_for(await jetstream(nc).publish_async(subject, b"event"), 5)
    assert (ack.stream, ack.seq) == ("S", 8)
    assert not [r for r in caplog.records if r.exc_info], "the other reply escaped into nats-py's reader task"


async def test_no_stream_is_still_no_stream_response(nc: NatsClient) -> None:
    ack = await jetstream(nc).publish_async(f"nowhere.{uuid.uuid4().hex}", b"event")
    with pytest.raises(NoStreamResponseError):
        await asyncio.wait_for(ack, 5)


async def test_a_run_of_publishes_with_free_slots_goes_out_in_one_write(nc: NatsClient) -> None:
    subject = f"acks.{uuid.uuid4().hex}"
    await impostor(nc, subject, json.dumps({"stream": "S", "seq": 9}).encode(), None)
    transport = nc._transport
    assert transport is not None
    writes = 0
    write = transport.writelines
    command = f" {subject} ".encode()  # PUB/HPUB of a publish; the impostor's replies go to the reply inbox

    def counted(payload: list[bytes]) -> None:
        nonlocal writes
        writes += command in b"".join(payload)
        write(payload)

    transport.writelines = counted  # type: ignore[method-assign]
    js = jetstream(nc)
    await js.publish_async(subject, b"first")  # sets up the reply inbox (a subscription: a write of its own)
    writes = 0
    acks = [await js.publish_async(subject, f"event {i}".encode(), wait_stall=5.0) for i in range(200)]
    await asyncio.wait_for(asyncio.gather(*acks), 10)
    # One write per publish (200; 234 with the replies before the fix) is what this guards against. When the loop
    # gets a turn mid-run under load the flusher sends what is pending, so allow a few writes, not one.
    assert writes <= 10, f"{writes} socket writes carried the 200 publishes: each publish went out alone"


async def test_with_every_slot_taken_the_stall_bound_still_holds(nc: NatsClient) -> None:
    subject = f"acks.{uuid.uuid4().hex}"

    async def silent(msg: Msg) -> None:  # hears the publish, never answers it
        return None

    await nc.subscribe(subject, cb=silent)
    await nc.flush()
    js = jetstream(nc, publish_async_max_pending=1)
    pending = await js.publish_async(subject, b"never acknowledged", wait_stall=5.0)
    with pytest.raises(TooManyStalledMsgsError):
        await js.publish_async(subject, b"no slot", wait_stall=0.2)
    pending.cancel()  # frees the slot, as a publisher's own timeout does
    await asyncio.sleep(0)
    impostor_subject = f"acks.{uuid.uuid4().hex}"
    await impostor(nc, impostor_subject, json.dumps({"stream": "S", "seq": 10}).encode(), None)
    ack = await asyncio.wait_for(await js.publish_async(impostor_subject, b"a slot again", wait_stall=0.2), 5)
    assert ack.seq == 10

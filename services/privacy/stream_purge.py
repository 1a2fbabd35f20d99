"""Removing a user's messages from JetStream streams (chat, log relay, dead letters).

Chat messages arrive from the platform in plaintext (mnemo cannot encrypt what it has not received yet), and
a dead letter keeps the body it could not process, so crypto-shredding does not reach them: erasure deletes
each message of the user from those streams by sequence. The log stream (``mnemo.log.>``) carries only the
log's encrypted form and ids, shredded with the keys; its messages of the user are deleted too, so that no
consumer still behind folds their plaintext events (ids, flags) into rows after the erasure. Retention limits
bound all of them anyway. Scanning is a full pass over each stream (an ephemeral consumer, no acks): erasure
is rare and streams are bounded.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from shared.events.envelope import UnknownEventType
from shared.events.recorded import REGISTRY

BATCH = 256
Match = Callable[[bytes], bool]


def belongs_to(tenant_id: str, user_id: str | None) -> Match:
    """Whether a message body (a chat payload, or a log event in a dead letter) is the user's (tenant's)."""

    def match(body: bytes) -> bool:
        try:
            doc: Any = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            return False
        if not isinstance(doc, dict) or doc.get("tenant_id") != tenant_id:
            return False
        if user_id is None:
            return True
        payload = doc.get("payload")
        if isinstance(payload, dict) and isinstance(doc.get("type"), str):  # a log event, relayed or dead-lettered
            try:
                return REGISTRY.get(doc["type"]).owner(payload) == user_id  # bots stay, whoever created them
            except UnknownEventType:
                return False
        return bool(doc.get("user_id") == user_id)  # a chat payload (a bot's has no user_id)

    return match


async def purge(js: JetStreamContext, stream: str, subject: str, match: Match) -> int:
    """Delete the messages of ``stream`` whose body ``match``es; returns how many. A missing stream: 0."""
    try:
        info = await js.stream_info(stream)
    except NotFoundError:
        return 0
    if info.state.messages == 0:
        return 0
    config = ConsumerConfig(ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL, inactive_threshold=60.0)
    sub = await js.pull_subscribe(subject, stream=stream, config=config)
    deleted = 0
    try:
        while True:
            try:
                msgs = await sub.fetch(BATCH, timeout=2.0)
            except NatsTimeout:
                break
            for msg in msgs:
                if match(msg.data):
                    await js.delete_msg(stream, msg.metadata.sequence.stream)
                    deleted += 1
            if not msgs or msgs[-1].metadata.num_pending == 0:
                break
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
    return deleted

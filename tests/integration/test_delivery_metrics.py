"""A batch consumer's metrics against the real nats-server: messages handled, failed, redelivered and
dead-lettered by reason category, batch sizes and times, all under the test's own service label."""

from __future__ import annotations

import pytest

from mnemo.shared.delivery import Item, Rejection
from mnemo.shared.metrics import REGISTRY
from mnemo.shared.settings import DeliverySettings
from tests.integration.test_delivery import Env, body, env  # noqa: F401 - the fixture
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_a_consumer_counts_what_it_handled_failed_and_dead_lettered(env: Env) -> None:  # noqa: F811
    poison, refused = 3, 4
    attempts: dict[int, int] = {}

    async def handle(items: list[Item[int]]) -> list[Rejection]:
        for item in items:
            attempts[item.value] = attempts.get(item.value, 0) + 1
        if any(i.value == poison for i in items):
            raise ValueError("cannot digest it")
        return [Rejection(i.msg, "cannot edit message 'm-4': it was deleted") for i in items if i.value == refused]

    for n in range(6):
        await env.publish(body(n))
    await env.publish(b"not json")
    await env.start(handle, DeliverySettings(max_deliver=2, ack_wait_s=5.0, batch_size=16))
    service = env.service

    def dead(reason: str) -> float:
        return sample("mnemo_messages_dead_lettered_total", service=service, reason=reason)

    await wait_until(lambda: dead("retries_exhausted") == 1, "the poison message dead-lettered")
    await wait_until(env.drained, "the whole stream acked")
    assert dead("invalid_payload") == 1  # the body that is not JSON
    assert dead("refused") == 1
    assert sample("mnemo_messages_handled_total", service=service) == 4  # 0, 1, 2, 5
    assert sample("mnemo_messages_failed_total", service=service) >= 1  # the poison's first delivery, naked
    assert sample("mnemo_messages_redelivered_total", service=service) >= 1  # ... and delivered again
    assert sample("mnemo_batch_size_messages_count", service=service) >= 2
    assert sample("mnemo_batch_size_messages_sum", service=service) >= 7
    assert sample("mnemo_handler_duration_seconds_count", service=service) >= 1
    assert sample("mnemo_batch_duration_seconds_count", service=service) >= 2

"""`python -m bench.observe`: what the metrics cost on the hot paths, per call, beside references measured in the
same run (a plain function call, a dict increment, a JSON parse of a chat event's body).

Timed: a bound counter's ``inc``, a bound histogram's ``observe``, one request's ``RpcMeter.answered``, one
batch of a consumer's ``DeliveryMeter`` calls (``received`` over 1,024 messages whose delivery count is read,
``handler``, ``handled``, ``settled``) per message, and the context reply's ``ContextMeter.observe``. Each is
the best of ``--repeats`` timings of ``--calls`` calls, in CPU time of the thread (other load on the machine
does not count; caches and frequency still do, hence the references).
Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

from nats.aio.msg import Msg

from mnemo.services.context_assembler.metering import ContextMeter
from mnemo.shared.delivery.meter import DeliveryMeter
from mnemo.shared.metrics import HANDLED, RPC_SECONDS
from mnemo.shared.rpc import RpcMeter
from mnemo_client.wire.contract import ContextAssembleReply, Section

BODY = json.dumps({"tenant_id": "t1", "user_id": "u1", "content": "The lighthouse keeper's log, entry 7." * 3})


class _Meta:
    num_delivered = 1


class _Msg:
    metadata = _Meta()


def best_us(call: Callable[[], Any], calls: int, repeats: int) -> float:
    """The fastest of ``repeats`` runs of ``calls`` calls, in microseconds of this thread's CPU per call (CPU
    time, not wall time: other processes on a loaded machine do not count)."""
    best = float("inf")
    for _ in range(repeats):
        started = time.thread_time()
        for _ in range(calls):
            call()
        best = min(best, time.thread_time() - started)
    return best / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    n, r = args.calls, args.repeats
    counts: dict[str, int] = {}

    def nothing() -> None:
        return None

    def dict_inc() -> None:
        counts["t1"] = counts.get("t1", 0) + 1

    counter = HANDLED.labels(service="bench-observe")
    histogram = RPC_SECONDS.labels(subject="bench.observe")
    rpc = RpcMeter("bench.observe.rpc")
    delivery = DeliveryMeter("bench-observe")
    # The meter reads only each message's ``metadata.num_delivered``: a stand-in with that one field will do.
    batch = cast("Sequence[Msg]", [_Msg() for _ in range(1024)])
    context, reply = ContextMeter(), ContextAssembleReply(
        context="...", sections=[Section(name=s, text="...", tokens=200) for s in ("system", "lore", "history")],
        sources=[], token_count=600, degraded=["lore:12"],
    )  # fmt: skip

    def one_batch() -> None:
        started = delivery.received(batch)
        delivery.handler(0.01)
        delivery.handled(len(batch))
        delivery.settled(started)

    reference = {
        "function_call_us": best_us(nothing, n, r),
        "dict_increment_us": best_us(dict_inc, n, r),
        "json_parse_of_a_chat_event_us": best_us(lambda: json.loads(BODY), n, r),
    }
    measured = {
        "counter_inc_us": best_us(counter.inc, n, r),
        "histogram_observe_us": best_us(lambda: histogram.observe(0.01), n, r),
        "rpc_reply_metrics_us": best_us(lambda: rpc.answered(time.perf_counter(), reply), n, r),
        "context_reply_metrics_us": best_us(lambda: context.observe(reply), n, r),
        "consumer_metrics_per_message_us": best_us(one_batch, max(1, n // 100), r) / len(batch),
    }
    parse = reference["json_parse_of_a_chat_event_us"]
    result = {
        "bench": "observe",
        **{k: round(v, 3) for k, v in {**reference, **measured}.items()},
        **{f"{k.removesuffix('_us')}_vs_json_parse": round(v / parse, 3) for k, v in measured.items()},
    }
    for key, value in result.items():
        print(f"{key:>48}: {value}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()

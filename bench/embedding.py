"""`make bench-embedding`: the embedding pipeline's texts/s beside the raw model's, same texts, same batch size.

Texts are real chat turns from the REALTALK dev set (`../shared/eval/realtalk`, read by path). The messages
are first recorded in the log and relayed to JetStream (not timed); then the embedding service starts and
the clock runs until its consumer has acknowledged every event (it acks after the vectors are upserted),
checked against the number of points in the index. The raw figure is the bundled model alone, configured as
the service runs it (`embed_sync` on all texts at once, so it can sort all of them by length: the pipeline
only sees one fetched window at a time) on the same texts at the same batch size, measured before and after
the pipeline. Beside it: the model with onnxruntime's spinning threads (`embedder.spin_threads`), its
fastest alone, which the service does not use because spinning threads take the cores its other work needs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import CpuMeter, embedded_servers, machine, print_result, running_service, wait_for_acks
from bench.embedding_raw import measure_raw_model, measure_raw_model_windowed
from mnemo.shared import subjects
from mnemo.shared.bootstrap import open_core
from mnemo.shared.eventlog.port import Append
from mnemo.shared.events.envelope import NewEvent, deterministic_id
from mnemo.shared.events.recorded import MESSAGE_RECORDED, conversation_stream
from mnemo.shared.settings import Settings
from mnemo.shared.tokens import estimate_tokens
from mnemo.shared.vectors.port import VectorFilter

REALTALK = Path(__file__).resolve().parents[2] / "shared" / "eval" / "realtalk"


def realtalk_texts(limit: int) -> list[str]:
    texts: list[str] = []
    for path in sorted(REALTALK.glob("*.json")):
        chat = json.loads(path.read_text())
        for key, turns in chat.items():
            if not key.startswith("session_") or not isinstance(turns, list):
                continue
            for turn in turns:
                text = (turn.get("clean_text") or turn.get("text") or "").strip()
                if text:
                    texts.append(text)
                if len(texts) >= limit:
                    return texts
    if not texts:
        raise SystemExit(f"no texts found under {REALTALK}")
    return texts


def chat_appends(texts: list[str], conversations: int, *, bot_replies: bool = False) -> list[Append]:
    """The conversations' ``message.recorded`` events, round robin over ``conversations``: every message the
    user's, or (``bot_replies``) the user and the bot taking turns."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    per_conv: dict[str, list[NewEvent]] = {}
    for i, text in enumerate(texts):
        conv = f"conv-{i % conversations}"
        events = per_conv.setdefault(conv, [])
        user = not bot_replies or len(events) % 2 == 0
        payload = {
            "user_id": "bench-user",
            "conversation_id": conv,
            "message_id": f"m-{i:07d}",
            "role": "user" if user else "assistant",
            "author_id": "persona" if user else "bot",
            "author_name": "Pat" if user else "Eli",
            "content": text,
            "created_at": (start + timedelta(seconds=i)).isoformat(),
            "bot_ids": ["bot"],
            "persona_id": "persona",
            "index": len(events),
            "tokens": estimate_tokens(text),
        }
        event_id = deterministic_id("bench", conv, str(i))
        events.append(NewEvent(event_id=event_id, type=MESSAGE_RECORDED.name, tenant_id="bench", payload=payload))
    return [Append(conversation_stream("bench", "bench-user", c), 0, evs) for c, evs in per_conv.items()]


async def record(settings: Any, appends: list[Append]) -> None:
    core = await open_core(settings)
    try:
        results = await core.store.append_batch(appends)
        committed = [e for r in results if not isinstance(r, Exception) for e in r.committed]
        await core.relay.publish_committed(committed)
    finally:
        await core.close()


async def measure_pipeline(settings: Any, n: int, cpu: CpuMeter) -> tuple[float, int]:
    async with running_service(settings, "embedding") as (core, _broker):
        js = core.nc.jetstream()
        cpu.start()
        start = time.perf_counter()
        await wait_for_acks(js, subjects.LOG_STREAM, subjects.durable("embedding"), n, timeout_s=1800)
        elapsed = time.perf_counter() - start
        cpu.stop()
        assert core.vectors is not None
        points = await core.vectors.count(VectorFilter.where(tenant_id="bench"))
    return n / elapsed, points


async def main(n: int, batch_size: int) -> dict[str, Any]:
    texts = realtalk_texts(n)
    # The raw reference is measured before and after the pipeline and averaged: on a shared 2-core machine
    # the load can drift during a run, and bracketing the pipeline keeps the ratio honest.
    spin = Settings().embedder.spin_threads  # the service's configuration (MNEMO_EMBEDDER__SPIN_THREADS)
    raw_before = await asyncio.to_thread(measure_raw_model, texts, batch_size, spin=spin)
    async with embedded_servers() as backends:
        settings = backends.settings.model_copy(
            update={"embedder": backends.settings.embedder.model_copy(update={"batch_size": batch_size})}
        )
        cpu = CpuMeter(backends.pids)
        await record(settings, chat_appends(texts, conversations=20))
        pipeline, points = await measure_pipeline(settings, len(texts), cpu)
    raw_after = await asyncio.to_thread(measure_raw_model, texts, batch_size, spin=spin)
    raw = (raw_before + raw_after) / 2
    window = settings.delivery.embedding_batch_size
    raw_windowed = await asyncio.to_thread(measure_raw_model_windowed, texts, batch_size, window, spin=spin)
    raw_spinning = raw if spin else await asyncio.to_thread(measure_raw_model, texts, batch_size, spin=True)
    if points < len(texts):
        raise SystemExit(f"only {points} of {len(texts)} texts were indexed")
    print(f"raw model (batch {batch_size}, spinning threads {'on' if spin else 'off'}): {raw:,.1f} texts/s")
    print(f"raw model, {window} texts at a time: {raw_windowed:,.1f} texts/s")
    print(f"raw model with spinning threads (fastest alone): {raw_spinning:,.1f} texts/s")
    print(f"pipeline (JetStream -> decrypt -> chunk -> embed -> upsert): {pipeline:,.1f} texts/s")
    per_process = cpu.report(len(texts))
    for name, p in per_process.items():
        print(f"  {name}: {p['cpu_us_per_item']} CPU-us per text, {p['busy']:.0%} of a core")
    return {
        "pipeline_texts_per_s": round(pipeline, 1),
        "raw_model_texts_per_s": round(raw, 1),
        "raw_model_before_after": [round(raw_before, 1), round(raw_after, 1)],
        "ratio": round(pipeline / raw, 3),
        # The same model fed one fetch window at a time: what is left is the pipeline's own overhead.
        "raw_model_per_window_texts_per_s": round(raw_windowed, 1),
        "ratio_same_window": round(pipeline / raw_windowed, 3),
        "window": window,
        "spin_threads": spin,
        "raw_model_spinning_texts_per_s": round(raw_spinning, 1),
        "ratio_vs_spinning": round(pipeline / raw_spinning, 3),
        "cpu": per_process,
        "texts": len(texts),
        "points": points,
        "batch_size": batch_size,
        **machine(),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    print_result(asyncio.run(main(args.texts, args.batch_size)))

"""Lore export as a streamed JSON body: a large book is sent entry by entry instead of as one string.

The reply of ``mnemo.rpc.lore.export.v1`` arrives as one NATS message (bounded by the server's max_payload);
what would otherwise double the gateway's memory for a big book is the one JSON string of the whole reply,
so the body is written in chunks of entries as the client reads it. The bytes are the reply's JSON exactly
(``json.loads`` of the body equals the reply).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

ENTRIES_PER_CHUNK = 64


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def export_chunks(reply: dict[str, Any], per_chunk: int = ENTRIES_PER_CHUNK) -> Iterator[bytes]:
    data = reply.get("data")
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(entries, dict):
        yield _dumps(reply).encode()
        return
    head = {k: v for k, v in reply.items() if k != "data"}
    rest = {k: v for k, v in data.items() if k != "entries"}
    prefix = _dumps(head)[:-1] + ("," if head else "") + '"data":{'
    prefix += "".join(f"{_dumps(k)}:{_dumps(v)}," for k, v in rest.items()) + '"entries":{'
    yield prefix.encode()
    items = list(entries.items())
    for start in range(0, len(items), per_chunk):
        chunk = items[start : start + per_chunk]
        text = ",".join(f"{_dumps(str(k))}:{_dumps(v)}" for k, v in chunk)
        yield (("," if start else "") + text).encode()
    yield b"}}}"

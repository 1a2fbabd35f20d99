"""Parse an uploaded file off the event loop, in a subprocess with time and memory limits.

A hostile file (a decompression bomb, a PDF built to loop, a 1 GB line) can then exhaust only that process:
its address space is capped (``RLIMIT_AS``), its CPU time too (``RLIMIT_CPU``), it runs at the lowest
priority (``nice`` 19: requests of other tenants go first), all three set by the child itself (``worker.py``
says why), and it is killed at a wall deadline. A process per document costs ~0.3 s of interpreter start,
nothing next to parsing a book, and unlike a process pool a killed worker leaves nothing behind to repair.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_ROOT = str(Path(__file__).resolve().parents[3])  # so the child imports this checkout's packages


@dataclass(frozen=True)
class ParseOutcome:
    ok: bool
    reason: str = ""
    pages: int = 0
    chunks: tuple[dict[str, Any], ...] = ()


async def parse_file(path: Path, name: str, *, timeout_s: float, memory_mb: int) -> ParseOutcome:
    """The chunks of the file, or a failure whose ``reason`` is for the user."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [_ROOT, os.environ.get("PYTHONPATH")]))}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mnemo.services.lore.documents.worker",
        str(path),
        name,
        str(memory_mb),
        str(int(timeout_s) + 1),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        return ParseOutcome(False, f"reading the file took longer than {timeout_s:.0f} s; it was stopped")
    if proc.returncode != 0:
        if b"MemoryError" in err or proc.returncode in (-9, -24, 137):
            return ParseOutcome(False, "the file needs more memory or time to read than mnemo allows for one document")
        return ParseOutcome(False, "the file could not be read (the reader stopped unexpectedly)")
    try:
        result = json.loads(out)
    except ValueError:
        return ParseOutcome(False, "the file could not be read (the reader stopped unexpectedly)")
    if not result.get("ok"):
        return ParseOutcome(False, str(result.get("reason") or "the file could not be read"))
    return ParseOutcome(True, "", int(result["pages"]), tuple(result["chunks"]))

"""A platform's publisher in its own process: pipelined JetStream publishes, every one awaiting its ack.

Benchmarks run it apart from the service they measure, as a platform would be: in the service's process
its publishing would take turns with the service on one event loop (and one core), which no deployment does.

Protocol (``python -m bench.publisher URL SUBJECT FILE``, FILE holding one JSON body per line, or with SUBJECT
``-`` one ``subject<TAB>body`` per line): the child connects, prints ``ready``, waits for a line on stdin,
publishes every body and prints a JSON line with the seconds it took and the CPU seconds it spent on them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import nats
from nats.js import JetStreamContext

WINDOW = 256  # publishes in flight, each awaiting its ack


async def publish_all(js: JetStreamContext, messages: list[tuple[str, bytes]], window: int = WINDOW) -> None:
    """Pipelined publishing of (subject, body): up to ``window`` publishes in flight, every one awaiting its ack."""
    for i in range(0, len(messages), window):
        chunk = messages[i : i + window]
        await asyncio.gather(
            *(js.publish(s, body, headers={"Nats-Msg-Id": f"{s}:{i + k}"}) for k, (s, body) in enumerate(chunk))
        )


@dataclass(frozen=True)
class Published:
    seconds: float  # from the first publish to the last ack
    cpu_seconds: float  # the publisher process's CPU over that time


class PublisherProcess:
    """The child process, connected and holding its bodies; ``publish`` starts it and returns its seconds."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.pid = process.pid

    async def publish(self) -> Published:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(b"go\n")
        await self.process.stdin.drain()
        line = await self.process.stdout.readline()
        if await self.process.wait() != 0 or not line:
            raise RuntimeError(f"publisher exited with {self.process.returncode}")
        return Published(**json.loads(line))


@contextlib.asynccontextmanager
async def publisher_process(url: str, subject: str | list[str], bodies: list[bytes]) -> AsyncIterator[PublisherProcess]:
    """A started publisher process, ready to publish ``bodies`` to ``subject`` (or each to its own, a list), killed
    if left unused."""
    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl") as file:
        if isinstance(subject, str):
            file.write(b"\n".join(bodies))
        else:
            file.write(b"\n".join(s.encode() + b"\t" + b for s, b in zip(subject, bodies, strict=True)))
        file.flush()
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.publisher",
            url,
            subject if isinstance(subject, str) else "-",
            file.name,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=Path(__file__).resolve().parent.parent,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            assert process.stdout is not None
            if (await process.stdout.readline()).strip() != b"ready":
                raise RuntimeError(f"publisher did not start (exit {await process.wait()})")
            yield PublisherProcess(process)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()


async def _main(url: str, subject: str, path: str) -> None:
    lines = Path(path).read_bytes().split(b"\n")
    if subject == "-":
        messages = [(s.decode(), b) for s, _, b in (line.partition(b"\t") for line in lines)]
    else:
        messages = [(subject, line) for line in lines]
    nc = await nats.connect(url)
    try:
        js = nc.jetstream(timeout=30)
        print("ready", flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.readline)
        start, cpu = loop.time(), time.process_time()
        await publish_all(js, messages)
        print(json.dumps({"seconds": loop.time() - start, "cpu_seconds": time.process_time() - cpu}), flush=True)
    finally:
        await nc.drain()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("subject")
    parser.add_argument("file")
    args = parser.parse_args()
    asyncio.run(_main(args.url, args.subject, args.file))

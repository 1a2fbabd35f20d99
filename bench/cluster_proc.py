"""``mnemo cluster`` started as its own process on free ports, as an operator would, for the cluster benchmarks
(``bench.scale``) and the fault suite (``bench.chaos``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mnemo.runtime.servers import free_port

ROOT = Path(__file__).resolve().parent.parent
READY = "mnemo cluster is serving"


def data_dir_of(pids_path: Path) -> Path:
    return pids_path.parent.parent


async def start_cluster(
    replicas: str, base: Path, label: str, attempt: int, env: dict[str, str] | None = None
) -> tuple[asyncio.subprocess.Process, Path, list[str]]:
    """One try at starting ``mnemo cluster`` on free ports: (process, data dir, [NATS URL, MongoDB URL])."""
    ports = [free_port() for _ in range(4)]
    nats_url, mongodb_url = f"nats://127.0.0.1:{ports[0]}", f"mongodb://127.0.0.1:{ports[3]}/?directConnection=true"
    data_dir = base / f"{label}-{attempt}"
    data_dir.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "mnemo.runtime.cli", "cluster", "--data-dir", str(data_dir / "data")]
    argv += ["--nats-url", nats_url, "--nats-ports", f"{ports[1]},{ports[2]}", "--mongodb-url", mongodb_url]
    argv += ["--replicas", replicas, "--stop-timeout", "20"]
    with open(data_dir / "cluster.out", "wb") as out:
        process = await asyncio.create_subprocess_exec(
            *argv, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env={**os.environ, **(env or {})}
        )
    return process, data_dir, [nats_url, mongodb_url]


async def stop_cluster(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGINT)
    try:
        await asyncio.wait_for(process.wait(), 120)
    except TimeoutError:
        process.kill()
        await process.wait()


@contextlib.asynccontextmanager
async def cluster(
    base: Path, replicas: str, label: str, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[str, str, dict[str, Any]]]:
    """``mnemo cluster --replicas replicas`` under ``base/<label>-<attempt>``, with ``env`` added to the
    environment: (NATS URL, MongoDB URL, pids.json) once it serves; stopped with Ctrl-C on the way out.

    Free ports are picked, then released for the cluster to bind, so on a shared machine another process may
    take one in between (a node then fails to listen): the cluster is started again, up to three times."""
    for attempt in range(1, 4):
        process, data_dir, (nats_url, mongodb_url) = await start_cluster(replicas, base, label, attempt, env)
        out = data_dir / "cluster.out"
        started = time.monotonic()
        try:
            while READY not in out.read_text(errors="replace"):
                if process.returncode is not None or time.monotonic() - started > 300:
                    raise RuntimeError(f"mnemo cluster did not start:\n{out.read_text(errors='replace')[-3000:]}")
                await asyncio.sleep(0.2)
        except RuntimeError as exc:
            await stop_cluster(process)
            if attempt == 3:
                raise
            print(f"  attempt {attempt} failed, starting again: {str(exc).splitlines()[-1][-200:]}", flush=True)
            continue
        pids = json.loads((data_dir / "data" / "run" / "pids.json").read_text())
        try:
            print(f"  {label}: mnemo cluster ready in {time.monotonic() - started:.1f}s ({replicas})", flush=True)
            yield nats_url, mongodb_url, pids
        except Exception:
            # A run that fails on a machine we cannot log into (CI) must say why: what the cluster reported
            # (a process that exited) and what its services logged last.
            print(post_mortem(out, pids), file=sys.stderr, flush=True)
            raise
        finally:
            await stop_cluster(process)
        return


def post_mortem(cluster_out: Path, pids: dict[str, Any], lines: int = 40) -> str:
    """The cluster's own output and each service process's last ``lines`` log lines."""
    parts = [f"--- {cluster_out} (last {lines} lines) ---", *_tail(cluster_out, lines)]
    for proc in pids.get("processes", []):
        if proc.get("kind") == "service" and proc.get("log"):
            alive = _alive(proc.get("pid"))
            parts += [
                f"--- {proc['name']}-{proc['replica']} (pid {proc['pid']}, {alive}) ---",
                *_tail(Path(proc["log"]), lines),
            ]
    return "\n".join(parts)


def _tail(path: Path, lines: int) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-lines:]
    except OSError as exc:
        return [f"(unreadable: {exc})"]


def _alive(pid: object) -> str:
    if not isinstance(pid, int):
        return "pid unknown"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "exited"
    except PermissionError:
        pass
    return "running"

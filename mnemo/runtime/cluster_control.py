"""``<data>/run/pids.json`` of ``mnemo cluster`` and the operator's commands on a running cluster.

pids.json: ``{"supervisor": <pid of mnemo cluster>, "processes": [{"name": "ingest", "kind": "service",
"replica": 1, "pid": 123, "http": "http://127.0.0.1:41234", "log": ".../logs/ingest-1.log"}, {"name": "nats-1",
"kind": "server", "pid": 456, "url": "nats://127.0.0.1:4222", "monitor": "http://127.0.0.1:8222", ...}, ...]}``
(``http``: a service's probe server); an entry gets
``"exit_code"`` once its process has exited. The supervisor rewrites it (atomically) whenever a process
starts or exits.

``mnemo cluster restart <name> [<replica>]`` does not start anything itself: it drops a request file in
``<data>/run/restart/`` that the supervisor picks up within half a second, so the new process is again its
child (same command line, environment and log file; stopped with the rest on Ctrl-C), then reports the new
pid. A process still running is stopped first. ``mnemo cluster status`` lists every process and whether it
is alive.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemo.runtime.servers import pid_alive

PIDS = "pids.json"
REQUESTS = "restart"


class ClusterControlError(RuntimeError):
    pass


@dataclass
class ProcEntry:
    name: str  # a service as in the subjects (ingest, context-assembler...), nats-<n> or secantusd
    kind: str  # "service" or "server"
    replica: int | None
    pid: int
    log: Path
    url: str | None = None
    monitor: str | None = None
    exit_code: int | None = None
    http: str | None = None  # a service's probe server: /healthz, /readyz, /metrics

    @property
    def label(self) -> str:
        return self.name if self.replica is None else f"{self.name}-{self.replica}"

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.replica is not None:
            out["replica"] = self.replica
        out["pid"] = self.pid
        pairs = (("url", self.url), ("monitor", self.monitor), ("http", self.http), ("exit_code", self.exit_code))
        for key, value in pairs:
            if value is not None:
                out[key] = value
        out["log"] = str(self.log.resolve())
        return out


def write_pids(run_dir: Path, entries: list[ProcEntry]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    doc = {"supervisor": os.getpid(), "processes": [e.as_json() for e in entries]}
    tmp = run_dir / f".{PIDS}.tmp"
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(run_dir / PIDS)


def read_pids(data_dir: Path) -> dict[str, Any]:
    path = data_dir / "run" / PIDS
    if not path.exists():
        raise ClusterControlError(f"no {path}: start the cluster with `make cluster` (mnemo cluster) first")
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def supervisor_running(doc: dict[str, Any]) -> bool:
    """Whether the supervisor pids.json names still runs (a reused pid running something else does not count)."""
    pid = int(doc.get("supervisor", 0))
    if not pid_alive(pid):
        return False
    try:
        return b"cluster" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # no /proc: trust the pid
        return True


def running_supervisor(data_dir: Path) -> int | None:
    """The pid of the ``mnemo cluster`` already running on ``data_dir``, if any."""
    try:
        doc = read_pids(data_dir)
    except (ClusterControlError, ValueError):
        return None
    return int(doc["supervisor"]) if supervisor_running(doc) and doc["supervisor"] != os.getpid() else None


def read_requests(run_dir: Path) -> list[Path]:
    folder = run_dir / REQUESTS
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".")) if folder.is_dir() else []


def _label(entry: dict[str, Any]) -> str:
    return str(entry["name"]) if entry.get("replica") is None else f"{entry['name']}-{entry['replica']}"


def find_entry(doc: dict[str, Any], name: str, replica: int | None) -> dict[str, Any]:
    """The one process called ``name`` (and ``replica``: required when the service has several)."""
    matches = [e for e in doc["processes"] if e["name"] == name and (replica is None or e.get("replica") == replica)]
    if not matches:
        known = ", ".join(_label(e) for e in doc["processes"])
        raise ClusterControlError(f"no process {name}{'' if replica is None else f' {replica}'} (processes: {known})")
    if len(matches) > 1:
        replicas = ", ".join(str(e.get("replica")) for e in matches)
        raise ClusterControlError(f"{name} has several replicas ({replicas}): say which, e.g. restart {name} 1")
    found: dict[str, Any] = matches[0]
    return found


def restart(data_dir: Path, name: str, replica: int | None, timeout: float = 120.0) -> dict[str, Any]:
    """Ask the running supervisor to start ``name`` (``replica``) again; return its new pids.json entry."""
    doc = read_pids(data_dir)
    if not supervisor_running(doc):
        raise ClusterControlError(
            f"the mnemo cluster of {data_dir} is not running: `make cluster` starts every process again"
        )
    entry = find_entry(doc, name, replica)
    label, old_pid = _label(entry), entry["pid"]
    folder = data_dir / "run" / REQUESTS
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{label}"
    tmp.write_text(f"{time.time()}\n")
    tmp.replace(folder / label)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not (folder / label).exists():
            new = find_entry(read_pids(data_dir), name, entry.get("replica"))
            if new["pid"] != old_pid and pid_alive(int(new["pid"])):
                return new
        time.sleep(0.2)
    raise ClusterControlError(f"{label} was not restarted within {timeout:.0f}s: see the supervisor's output")


def status_lines(data_dir: Path) -> list[str]:
    """One line per process: label, pid, up or down (with its exit code), URL."""
    doc = read_pids(data_dir)
    running = supervisor_running(doc)
    lines = [f"supervisor pid {doc.get('supervisor')}: {'running' if running else 'not running'}"]
    for e in doc["processes"]:
        state = "up" if pid_alive(int(e["pid"])) and "exit_code" not in e else f"down ({e.get('exit_code')})"
        lines.append(f"{_label(e):<22} pid {e['pid']:<8} {state:<10} {e.get('url', '')}")
    return lines

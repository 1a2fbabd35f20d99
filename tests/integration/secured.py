"""A nats-server secured as ``mnemo run --secure`` does it (``mnemo.runtime.secure``: TLS and the least-privilege
users of ``mnemo.runtime.nats_auth``), and clients that connect as one of its users and record every permission
violation the server reports."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import nats
from nats.aio.client import Client as NatsClient

from mnemo.runtime.secure import SecureNats, secure_nats
from mnemo.runtime.servers import ChildServer, free_port, start_nats
from mnemo.shared.natsconn import connect_options
from mnemo.shared.settings import NatsSettings, Settings


@dataclass
class SecuredNats:
    server: ChildServer
    secure: SecureNats

    @property
    def url(self) -> str:
        return self.server.url

    def settings(self, user: str | None = None, **values: object) -> Settings:
        """Settings that connect as ``user`` (unset: the process's service name) over TLS."""
        nats_settings = NatsSettings(user=user, password_dir=self.secure.password_dir, tls_ca_file=self.secure.ca_file)
        return Settings(nats_url=self.url, nats=nats_settings, **values)  # type: ignore[arg-type]

    def violations(self) -> list[str]:
        """The permission violations the server logged so far."""
        return [line for line in self.server.log_path.read_text().splitlines() if "Permissions Violation" in line]


@dataclass
class NodeEndpoint:
    """A node of a secured cluster (``mnemo.runtime.secure`` files under ``secure_dir``)."""

    url: str
    secure_dir: Path

    def settings(self, user: str | None = None) -> Settings:
        nats_settings = NatsSettings(
            user=user, password_dir=self.secure_dir / "passwords", tls_ca_file=self.secure_dir / "tls" / "ca.pem"
        )
        return Settings(nats_url=self.url, nats=nats_settings)


class Endpoint(Protocol):
    @property
    def url(self) -> str: ...

    def settings(self, user: str | None = None) -> Settings: ...


def start_secured(directory: Path) -> Iterator[SecuredNats]:
    secure = secure_nats(directory)
    server = start_nats(directory, port=free_port(), extra_config=secure.server_config)
    try:
        yield SecuredNats(server, secure)
    finally:
        server.stop()


@dataclass
class Client:
    """A connection as one user, with the errors the server sent it."""

    nc: NatsClient
    errors: list[str] = field(default_factory=list)

    async def denied(self, what: str, timeout: float = 10.0) -> str:
        """Wait for the server's permission violation naming ``what`` (e.g. ``Subscription to "mnemo.log.>"``)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            for error in self.errors:  # nats-py lowercases the server's message
                if "permissions violation" in error.lower() and what.lower() in error.lower():
                    return error
            await asyncio.sleep(0.05)
        raise AssertionError(f"no permission violation for {what}; errors: {self.errors}")

    def allowed(self) -> None:
        assert not [e for e in self.errors if "permissions violation" in e.lower()], self.errors


@contextlib.asynccontextmanager
async def connected(secured: Endpoint, user: str) -> AsyncIterator[Client]:
    client = Client(None)  # type: ignore[arg-type]

    async def on_error(exc: Exception) -> None:
        client.errors.append(str(exc))

    client.nc = await nats.connect(
        secured.url, error_cb=on_error, **connect_options(secured.settings(user)), allow_reconnect=False
    )
    try:
        yield client
    finally:
        await client.nc.close()

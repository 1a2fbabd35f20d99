"""Every NATS connection mnemo makes takes its credentials and TLS from here (``MNEMO_NATS__*``).

A process connects as one user: ``nats.user`` when set, else the identity it passes (a service's name; the
embedded stack's shared core is ``stack``), once a password or ``nats.password_dir`` is configured. Each
user's replies arrive under its own inbox prefix ``_INBOX.<user>``: the secured server configuration
(``mnemo/runtime/nats_auth.py``) lets a user subscribe to its own inboxes only, so no client can read the replies
(JetStream deliveries of the log included) meant for another.
"""

from __future__ import annotations

import ssl
from typing import Any

import nats
from nats.aio.client import Client as NatsClient

from mnemo.shared.settings import Settings


class NatsCredentialsError(RuntimeError):
    """The settings name a user whose password cannot be found."""


def nats_user(settings: Settings, identity: str | None = None) -> str | None:
    """The user this connection authenticates as, or None when authentication is not configured."""
    conf = settings.nats
    if conf.password is None and conf.password_dir is None:
        return conf.user
    return conf.user or identity or settings.service_name


def inbox_prefix(user: str | None) -> str:
    return f"_INBOX.{user}" if user else "_INBOX"


def tls_context(settings: Settings) -> ssl.SSLContext | None:
    """A client TLS context when a CA (or a client certificate) is configured; None keeps plain TCP."""
    conf = settings.nats
    if conf.tls_ca_file is None and conf.tls_cert_file is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=conf.tls_ca_file)
    if conf.tls_cert_file is not None:
        context.load_cert_chain(conf.tls_cert_file, conf.tls_key_file)
    return context


def connect_options(settings: Settings, identity: str | None = None) -> dict[str, Any]:
    """Keyword arguments for ``nats.connect`` and FastStream's ``NatsBroker``: user, password, TLS, inbox."""
    user = nats_user(settings, identity)
    options: dict[str, Any] = {"inbox_prefix": inbox_prefix(user)}
    if user is not None:
        options["user"] = user
        options["password"] = _password(settings, user)
    if (tls := tls_context(settings)) is not None:
        options["tls"] = tls
    return options


def _password(settings: Settings, user: str) -> str:
    conf = settings.nats
    if conf.password is not None:
        return conf.password.get_secret_value()
    if conf.password_dir is None:
        raise NatsCredentialsError(f"MNEMO_NATS__USER={user} needs MNEMO_NATS__PASSWORD or MNEMO_NATS__PASSWORD_DIR")
    path = conf.password_dir / f"{user}.password"
    try:
        return path.read_text().strip()
    except OSError as exc:
        raise NatsCredentialsError(f"no password for NATS user {user!r}: {path} ({exc.strerror})") from exc


async def connect(settings: Settings, identity: str | None = None, **kwargs: Any) -> NatsClient:
    """``nats.connect`` to ``settings.nats_servers`` as this process's user; ``kwargs`` add to the options."""
    return await nats.connect(settings.nats_servers, **connect_options(settings, identity), **kwargs)

"""API keys: each key acts for exactly one tenant.

Keys are kept and compared as SHA-256 digests, so a key file never holds a usable key; a clear-text key from
the settings (development) is hashed at start like the others. A presented key is hashed and looked up: a
digest lookup leaks nothing usable about other keys through timing, since an attacker cannot choose digests.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from pathlib import Path

PREFIX = "sha256:"


class KeyFileError(ValueError):
    pass


def digest(key: str) -> str:
    return PREFIX + hashlib.sha256(key.encode()).hexdigest()


def new_key(tenant: str) -> tuple[str, str]:
    """A fresh random key and its line for a key file."""
    key = "mnemo_" + secrets.token_urlsafe(32)
    return key, f"{digest(key)} {tenant}"


def parse_key_file(text: str, source: str = "key file") -> dict[str, str]:
    """``sha256:<hex> <tenant>`` lines (blank lines and ``#`` comments skipped) -> digest -> tenant."""
    keys: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        hexpart = parts[0].removeprefix(PREFIX)
        if len(parts) != 2 or not parts[0].startswith(PREFIX) or len(hexpart) != 64:
            raise KeyFileError(f"{source}:{number}: expected `sha256:<64 hex digits> <tenant>`")
        try:
            bytes.fromhex(hexpart)
        except ValueError:
            raise KeyFileError(f"{source}:{number}: not a hex digest") from None
        keys[PREFIX + hexpart.lower()] = parts[1]
    return keys


class KeyRing:
    """Digest -> tenant, from the clear keys of the settings and the hashed keys of a file."""

    def __init__(self, digests: Mapping[str, str]) -> None:
        self._tenants = dict(digests)

    @classmethod
    def load(cls, clear: Mapping[str, str], path: Path | None) -> KeyRing:
        digests = {digest(key): tenant for key, tenant in clear.items()}
        if path is not None:
            digests |= parse_key_file(path.read_text(), str(path))
        return cls(digests)

    def __len__(self) -> int:
        return len(self._tenants)

    def tenant_of(self, key: str) -> str | None:
        """The tenant ``key`` acts for, or None for an unknown key."""
        return self._tenants.get(digest(key)) if key else None

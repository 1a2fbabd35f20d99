"""API keys: each key acts for exactly one tenant, and may hold the memory API's engine right.

A key file line is ``sha256:<hex> <tenant>``, or ``sha256:<hex> <tenant> engine`` for a key that may write
campaign and character memories (the ``mnemo.rpc.memory.engine.*`` calls: a game engine's or game master's
tool, docs/memory-api.md); a clear key of the settings maps to ``"<tenant>"`` or ``"<tenant> engine"``. Without
the word a key writes only the ``player:<user_id>`` namespace of the user it names. Keys are kept and compared as SHA-256 digests, so a key file never holds a usable key; a clear-text key from
the settings (development) is hashed at start like the others. A presented key is hashed and looked up: a
digest lookup leaks nothing usable about other keys through timing, since an attacker cannot choose digests.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

PREFIX = "sha256:"
ENGINE = "engine"


class KeyGrant(NamedTuple):
    tenant: str
    engine: bool = False


def _grant(words: list[str], where: str) -> KeyGrant:
    """``<tenant> [engine]``."""
    if len(words) == 1 or (len(words) == 2 and words[1] == ENGINE):
        return KeyGrant(words[0], len(words) == 2)
    raise KeyFileError(f"{where}: expected `<tenant>` or `<tenant> {ENGINE}` after the key")


class KeyFileError(ValueError):
    pass


def digest(key: str) -> str:
    return PREFIX + hashlib.sha256(key.encode()).hexdigest()


def new_key(tenant: str, *, engine: bool = False) -> tuple[str, str]:
    """A fresh random key and its line for a key file (with the engine right when asked)."""
    key = "mnemo_" + secrets.token_urlsafe(32)
    return key, f"{digest(key)} {tenant}" + (f" {ENGINE}" if engine else "")


def parse_key_file(text: str, source: str = "key file") -> dict[str, KeyGrant]:
    """``sha256:<hex> <tenant> [engine]`` lines (blank lines and ``#`` comments skipped) -> digest -> grant."""
    keys: dict[str, KeyGrant] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        hexpart = parts[0].removeprefix(PREFIX)
        if len(parts) not in (2, 3) or not parts[0].startswith(PREFIX) or len(hexpart) != 64:
            raise KeyFileError(f"{source}:{number}: expected `sha256:<64 hex digits> <tenant> [{ENGINE}]`")
        try:
            bytes.fromhex(hexpart)
        except ValueError:
            raise KeyFileError(f"{source}:{number}: not a hex digest") from None
        keys[PREFIX + hexpart.lower()] = _grant(parts[1:], f"{source}:{number}")
    return keys


class KeyRing:
    """Digest -> grant (tenant, engine right), from the clear keys of the settings and the hashed keys of a file."""

    def __init__(self, digests: Mapping[str, KeyGrant]) -> None:
        self._grants = dict(digests)

    @classmethod
    def load(cls, clear: Mapping[str, str], path: Path | None) -> KeyRing:
        digests = {digest(key): _grant(value.split(), "MNEMO_GATEWAY__API_KEYS") for key, value in clear.items()}
        if path is not None:
            digests |= parse_key_file(path.read_text(), str(path))
        return cls(digests)

    def __len__(self) -> int:
        return len(self._grants)

    def grant_of(self, key: str) -> KeyGrant | None:
        """What ``key`` may do, or None for an unknown key."""
        return self._grants.get(digest(key)) if key else None

    def tenant_of(self, key: str) -> str | None:
        """The tenant ``key`` acts for, or None for an unknown key."""
        grant = self.grant_of(key)
        return grant.tenant if grant else None

"""API keys: each key acts for exactly one tenant, and may hold the engine right and the operator right.

A key file line is ``sha256:<hex> <tenant> [engine] [operator]``: ``engine`` for a key that may write campaign
and character memories (the ``mnemo.rpc.memory.engine.*`` calls: a game engine's or game master's tool,
docs/memory-api.md), ``operator`` for one that may read the operator views (its tenant's dead letters and their
redrive, consumer lag, its tenant's usage: ``gateway/operator.py``); a clear key of the settings maps to
``"<tenant> [engine] [operator]"``. Without ``engine`` a key writes only the ``player:<user_id>`` namespace. Keys are kept and compared as SHA-256 digests, so a key file never holds a usable key; a clear-text key from
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
OPERATOR = "operator"
RIGHTS = (ENGINE, OPERATOR)


class KeyGrant(NamedTuple):
    tenant: str
    engine: bool = False
    operator: bool = False


def _grant(words: list[str], where: str) -> KeyGrant:
    """``<tenant> [engine] [operator]`` (each right once, in any order)."""
    rights = words[1:]
    if words and all(r in RIGHTS for r in rights) and len(set(rights)) == len(rights):
        return KeyGrant(words[0], ENGINE in rights, OPERATOR in rights)
    raise KeyFileError(f"{where}: expected `<tenant> [{ENGINE}] [{OPERATOR}]` after the key")


class KeyFileError(ValueError):
    pass


def digest(key: str) -> str:
    return PREFIX + hashlib.sha256(key.encode()).hexdigest()


def new_key(tenant: str, *, engine: bool = False, operator: bool = False) -> tuple[str, str]:
    """A fresh random key and its line for a key file (with the rights asked for)."""
    key = "mnemo_" + secrets.token_urlsafe(32)
    rights = [r for r, wanted in ((ENGINE, engine), (OPERATOR, operator)) if wanted]
    return key, " ".join([digest(key), tenant, *rights])


def parse_key_file(text: str, source: str = "key file") -> dict[str, KeyGrant]:
    """``sha256:<hex> <tenant> [engine]`` lines (blank lines and ``#`` comments skipped) -> digest -> grant."""
    keys: dict[str, KeyGrant] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        hexpart = parts[0].removeprefix(PREFIX)
        if len(parts) not in (2, 3, 4) or not parts[0].startswith(PREFIX) or len(hexpart) != 64:
            raise KeyFileError(f"{source}:{number}: expected `sha256:<64 hex digits> <tenant> [{ENGINE}] [{OPERATOR}]`")
        try:
            bytes.fromhex(hexpart)
        except ValueError:
            raise KeyFileError(f"{source}:{number}: not a hex digest") from None
        keys[PREFIX + hexpart.lower()] = _grant(parts[1:], f"{source}:{number}")
    return keys


class KeyRing:
    """Digest -> grant (tenant, engine and operator rights), from the clear keys of the settings and the hashed keys of a file."""

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

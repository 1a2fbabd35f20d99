"""What an attacker holding a copy of the databases and the key store could read: every encrypted token of
MongoDB's raw documents and of the JetStream streams, tried with every key left in the key store.

Written against the stored formats (docs/privacy.md), with ``cryptography`` only and no project code, so a
bug in mnemo's own decryption cannot hide a readable token: a data key is unwrapped with the KEK (associated
data ``dek`` and its scope), a token ``enc1:<key id>:<base64 nonce|ciphertext>`` is opened with associated
data ``tenant, record, field`` (the record is the document's ``_id`` or the event's ``event_id``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SEP = "\x1f"
PREFIX = "enc1:"


def data_keys(kek_file: Path, key_docs: list[dict[str, Any]]) -> dict[str, AESGCM]:
    """Every data key of the key store (``tenant_keys`` documents), unwrapped, by key id."""
    kek = AESGCM(base64.b64decode(kek_file.read_text().strip()))
    out = {}
    for d in key_docs:
        wrapped = bytes(d["wrapped"])
        out[d["key_id"]] = AESGCM(kek.decrypt(wrapped[:12], wrapped[12:], f"dek{SEP}{d['_id']}".encode()))
    return out


@dataclass
class Found:
    tokens: int = 0  # encrypted tokens seen
    opened: list[str] = field(default_factory=list)  # what the keys could decrypt
    plain: list[str] = field(default_factory=list)  # every plaintext string seen (outside tokens)

    def readable(self) -> str:
        return "\n".join(self.opened + self.plain)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def inspect(doc: dict[str, Any], keys: dict[str, AESGCM], found: Found) -> None:
    """Tokens are top-level fields of read-model documents and of an event's ``payload``."""
    record = str(doc.get("event_id", doc.get("_id")))
    tenant = str(doc.get("tenant_id"))
    fields = list(doc.items()) + (list(doc["payload"].items()) if isinstance(doc.get("payload"), dict) else [])
    tokens = set()
    for name, value in fields:
        if isinstance(value, str) and value.startswith(PREFIX):
            tokens.add(value)
            found.tokens += 1
            key_id, blob_b64 = value[len(PREFIX) :].split(":", 1)
            key = keys.get(key_id)
            if key is None:
                continue
            blob = base64.b64decode(blob_b64)
            try:
                found.opened.append(
                    key.decrypt(blob[:12], blob[12:], SEP.join((tenant, record, name)).encode()).decode()
                )
            except InvalidTag:
                continue
    found.plain.extend(s for s in _strings(doc) if s not in tokens)


def inspect_body(body: bytes, keys: dict[str, AESGCM], found: Found) -> None:
    try:
        doc = json.loads(body)
    except ValueError:
        found.plain.append(body.decode(errors="replace"))
        return
    if isinstance(doc, dict):
        inspect(doc, keys, found)
    else:
        found.plain.extend(_strings(doc))

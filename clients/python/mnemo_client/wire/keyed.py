"""Keyed chat subjects (v2): the tenant and the event's key ride in the subject.

``mnemo.chat.<entity>.<fact>.v2.<tenant>.<key>``, the key being the conversation (messages, swipes, forks), the
bot or the persona. With both in the subject, NATS itself maps every event of one conversation to the same
ingest partition (docs/scaling.md); the v1 subjects, which carry neither, stay served.

A value becomes one subject token by :func:`subject_token`: its UTF-8 bytes, each ASCII letter, digit, ``-``
and ``_`` kept, every other byte written ``%`` and two upper-case hex digits (``a.b`` is ``a%2Eb``). The escape
is canonical, one token per value: ingest dead-letters an event whose tokens are not exactly its payload's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_KEPT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_PLAIN = re.compile(r"[A-Za-z0-9_-]+")
_FIELD = re.compile(r"\{(\w+)\}")


def subject_token(value: str) -> str:
    """``value`` as one NATS subject token (the escape in the module docstring)."""
    if _PLAIN.fullmatch(value):
        return value
    return "".join(chr(b) if b in _KEPT else f"%{b:02X}" for b in value.encode())


def keyed_subject(template: str, body: Mapping[str, Any]) -> str:
    """The subject of ``template`` (``mnemo.chat.message.created.v2.{tenant_id}.{conversation_id}``) for an
    event's JSON ``body``: each ``{field}`` replaced by the token of the field's value."""

    def token(match: re.Match[str]) -> str:
        value = body.get(match.group(1))
        if not isinstance(value, str) or not value:
            raise ValueError(f"the event has no {match.group(1)} to put in its subject")
        return subject_token(value)

    return _FIELD.sub(token, template)

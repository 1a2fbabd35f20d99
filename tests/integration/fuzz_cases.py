"""Hypothesis strategies of bad input for the public subjects: a valid payload (a dict built by the caller from
the contract registry's examples with random values) and mutations of it, each with the outcome the contract promises.

The contract models are the oracle: a mutation is kept only when the model (strict for requests, as
``mnemo.shared.rpc`` parses them; lenient for chat events, which ignore unknown fields) really rejects it, so an
expected ``bad_request`` or dead letter is never a guess. ``names``: words of which the error message or
dead-letter reason must contain at least one (the field, or what is wrong with the body).
"""

from __future__ import annotations

import json
import string
import uuid
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

#: A value of every JSON type, and times out of range once in UTC; the oracle keeps those a field refuses.
WRONG_VALUES: tuple[Any, ...] = (
    12345,
    -1.5,
    True,
    False,
    None,
    [],
    ["x", 1],
    {},
    {"a": 1},
    "",
    "not-a-value",
    "x" * 300,
)
#: Byte sequences that are not UTF-8: a lone continuation byte, a truncated sequence, an encoded surrogate,
#: an overlong encoding of "/", and bytes that never occur; then escaped lone surrogates.
INVALID_UTF8: tuple[bytes, ...] = (b"\x80", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\xff\xfe")
#: JSON escapes no UTF-8 string can hold: lone surrogates.
LONE_SURROGATES: tuple[bytes, ...] = (b"\\ud800", b"\\udfff", b"x\\ud83d")
JSON_WORDS = ("JSON", "json", "unicode", "UTF")
KINDS = ("malformed_json", "not_an_object", "invalid_utf8", "wrong_type", "missing", "unknown_field", "oversized", "unknown_version")  # fmt: skip
MB = 1024 * 1024
#: Strictly below the embedded nats-server's 8 MB max_payload, with room for the rest of the body.
MAX_OVERSIZED = 6 * MB

#: Ids and short texts: any unicode but surrogates (JSON cannot carry them as UTF-8).
ids = st.text(min_size=1, max_size=24)
texts = st.text(max_size=120)
ascii_ids = st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=1, max_size=16)


@dataclass(frozen=True)
class Bad:
    """One input and its promised outcome: ``ok`` (a reply that is not an error / the event recorded),
    ``bad_request`` / ``dead_letter`` (naming one of ``names``), ``not_found``, or ``no_responders``."""

    kind: str
    body: bytes
    expect: str
    names: tuple[str, ...] = ()
    subject_suffix: str | None = None  # an unknown version instead of ``.v1``
    replay: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def marker() -> str:
    return f"fz{uuid.uuid4().hex}"


def encode(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False).encode()


def rejects(model: type[BaseModel], body: bytes) -> bool:
    try:
        model.model_validate_json(body)
    except ValidationError:
        return True
    return False


def _bounded_strings(model: type[BaseModel], payload: dict[str, Any]) -> list[str]:
    """String fields of ``payload`` that ``model`` refuses when a megabyte long (every id and text has a limit)."""
    big = "\u00e9" * 500_000
    return [k for k, v in payload.items() if isinstance(v, str) and rejects(model, encode({**payload, k: big}))]


#: Any JSON value, with the edges a schema may let through: huge and negative integers, non-finite floats
#: (``json.dumps`` writes them as ``Infinity`` / ``NaN``, which pydantic reads), empty and odd strings.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**80), 2**80) | st.floats() | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


def free_form(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """An object with some of ``keys`` (and now and then another key) holding any JSON values."""
    return st.dictionaries(st.sampled_from(keys) | st.text(max_size=12), json_values, max_size=8)


@st.composite
def mutations(draw: st.DrawFn, model: type[BaseModel], payload: dict[str, Any], *, bad: str, strict: bool) -> Bad:
    """A mutation of ``payload`` (valid for ``model``) that ``model`` rejects; ``bad`` is the outcome promised
    for a rejected input (``bad_request`` or ``dead_letter``). ``strict``: unknown fields are refused (requests);
    otherwise they are ignored and the input stays valid (chat events). The payload's first key keeps a marker,
    so even a corrupted body can be told apart from the others."""
    valid = encode(payload)
    kind = draw(st.sampled_from(KINDS))
    if kind == "malformed_json":
        cut = draw(st.integers(1, 4))
        tail = draw(st.sampled_from([b"", b"x", b",}", b"]", b'"', b"\x00"]))
        body = valid[:-cut] + tail
        assert rejects(model, body), body  # every cut of an object's end breaks it
        return Bad(kind, body, bad, (*JSON_WORDS, "EOF", "while parsing"))
    if kind == "not_an_object":
        first = next(iter(payload.values()))
        body = encode(draw(st.sampled_from([[first], first, [payload], [42, None, True, first]])))  # the marker kept
        return Bad(kind, body, bad, ("<body>", "object", "dictionary", "instance"))
    if kind == "invalid_utf8":
        junk = draw(st.sampled_from(INVALID_UTF8 + LONE_SURROGATES))
        at = valid.rindex(b'"', 0, len(valid) - 1)  # inside the last string value, or just before its quote
        body = valid[:at] + junk + valid[at:]
        return Bad(kind, body, bad, JSON_WORDS)
    if kind == "wrong_type":
        wrong = {n: vs for n in model.model_fields if (vs := [v for v in WRONG_VALUES if rejects(model, encode({**payload, n: v}))])}  # fmt: skip
        name = draw(st.sampled_from(sorted(wrong)))
        value = draw(st.sampled_from(wrong[name]))
        return Bad(kind, encode({**payload, name: value}), bad, (name,), extra={"field": name, "value": value})
    if kind == "missing":
        required = [n for n, i in model.model_fields.items() if i.is_required() and n in payload]
        name = draw(st.sampled_from(required))
        return Bad(kind, encode({k: v for k, v in payload.items() if k != name}), bad, (name,), extra={"field": name})
    if kind == "unknown_field":
        key = draw(st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=12).map(lambda s: f"x_{s}"))
        body = encode({**payload, key: draw(st.sampled_from(WRONG_VALUES))})
        return Bad(kind, body, bad if strict else "ok", (key,), extra={"field": key})
    if kind == "oversized":
        name = draw(st.sampled_from(_bounded_strings(model, payload)))
        size = draw(st.integers(1_000_000, MAX_OVERSIZED))
        body = encode({**payload, name: "\u00e9" * (size // 2)})  # two bytes each: a big body, valid UTF-8
        assert rejects(model, body), name
        # A chat event over MNEMO_LIMITS__MAX_MESSAGE_BYTES is refused before it is parsed: its reason names
        # that limit, not the field (requests have no such limit and name the field).
        return Bad(kind, body, bad, (name, "message_too_large"), extra={"field": name, "bytes": len(body)})
    suffix = draw(st.sampled_from([".v2", ".v0", ".v10", ".V1", ".v1.x"]))
    return Bad("unknown_version", valid, "unknown_version", ("unknown subject",), subject_suffix=suffix)

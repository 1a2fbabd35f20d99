"""The stored form of an event: what MongoDB holds and what the relay publishes to JetStream.

Why one codec for both: user text must be encrypted at rest *and* on the bus (JetStream persists messages
to disk), so the log and JetStream carry the very same encrypted document and every consumer decodes it
with this codec. The payload fields an event type lists in ``encrypted_fields`` are encrypted with the
data key of the user the type's ``key_owner`` field names (else the tenant's) and bound (AES-GCM associated data) to the tenant, the ``event_id`` and the field name,
so a ciphertext copied to another event, field or tenant does not decrypt.

Stored form (a plain dict, BSON- and JSON-friendly)::

    {"event_id", "type", "schema_version" (as written, never rewritten), "stream_id", "version",
     "tenant_id", "occurred_at", "recorded_at", "correlation_id", "causation_id", "traceparent", "payload"}

``traceparent`` (W3C trace context, metadata rather than payload) is kept so the relay can publish it as a
header and one message's path stays one trace; documents written before it existed lack it (None).

Normalisation, so every adapter and the wire return identical envelopes: timestamps are UTC truncated to
milliseconds (BSON dates hold milliseconds) and the payload is converted to JSON types (datetimes become
RFC 3339 strings that the payload models parse back). ``decode`` decrypts, then chains the type's upcasters
up to its current schema version.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_json, to_jsonable_python

from mnemo.shared.crypto import FieldCipher, KeyErased
from mnemo.shared.events.envelope import EventEnvelope, EventRegistry, EventType, NewEvent, UnknownEventType

StoredDoc = dict[str, Any]

_ENVELOPE_FIELDS = (
    "event_id",
    "type",
    "schema_version",
    "stream_id",
    "version",
    "tenant_id",
    "occurred_at",
    "recorded_at",
    "correlation_id",
    "causation_id",
    "traceparent",
    "payload",
)


class MalformedEvent(ValueError):
    """A stored or wire document that is not an event (bad JSON, missing or invalid envelope fields)."""


def utc_ms(value: datetime) -> datetime:
    """UTC, millisecond precision (what a BSON date keeps); naive values are taken to be UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    return value.replace(microsecond=value.microsecond - value.microsecond % 1000)


class EventCodec:
    """Encodes envelopes to the stored (encrypted) form and decodes them back (decrypted, upcast).

    Raises :class:`UnknownEventType` for a type missing from the registry, :class:`MalformedEvent` for a
    document that is not an event, ``UnknownSchemaVersion`` when no upcaster chain reaches the current
    version and ``DecryptionError`` for damaged or misplaced ciphertext. Consumers dead-letter all four.
    """

    def __init__(self, registry: EventRegistry, cipher: FieldCipher) -> None:
        self.registry = registry
        self.cipher = cipher

    def event_type(self, name: str, event_id: str = "?") -> EventType[Any]:
        try:
            return self.registry.get(name)
        except UnknownEventType:
            raise UnknownEventType(
                f"event {event_id}: type {name!r} is not registered (known: {', '.join(self.registry.names())})"
            ) from None

    def normalize(self, envelope: EventEnvelope) -> EventEnvelope:
        """The envelope exactly as a read will return it, minus decryption and upcasting."""
        return envelope.model_copy(
            update={
                "occurred_at": utc_ms(envelope.occurred_at),
                "recorded_at": utc_ms(envelope.recorded_at),
                "payload": to_jsonable_python(envelope.payload),
            }
        )

    def readable(self, envelope: EventEnvelope) -> EventEnvelope:
        """What a read returns for a just-written ``envelope``: normalised and upcast (no crypto round trip)."""
        return self.upcast(self.normalize(envelope))

    def upcast(self, env: EventEnvelope) -> EventEnvelope:
        """``env`` (already ``normalize``d) at its type's current schema version."""
        et = self.event_type(env.type, env.event_id)
        if env.schema_version == et.schema_version:
            return env
        payload = et.upcast(env.schema_version, env.payload)
        return env.model_copy(update={"payload": payload, "schema_version": et.schema_version})

    async def encode(self, envelope: EventEnvelope) -> StoredDoc:
        return await self.encode_normalized(self.normalize(envelope))

    async def encode_normalized(self, env: EventEnvelope) -> StoredDoc:
        """The stored form of ``env``, which ``normalize`` returned (the event log keeps both, so it
        normalises once)."""
        et = self.event_type(env.type, env.event_id)
        payload = env.payload
        if et.encrypted_fields:
            tenant = await self.cipher.for_tenant(env.tenant_id, et.owner(payload))
            payload = tenant.encrypt_fields(env.event_id, payload, et.encrypted_fields)
        doc = {name: getattr(env, name) for name in _ENVELOPE_FIELDS}
        if doc["traceparent"] is None:
            del doc["traceparent"]  # untraced events keep the document shape they always had
        doc["payload"] = payload
        return doc

    async def decode(self, doc: StoredDoc, decrypt: Collection[str] | None = None) -> EventEnvelope:
        """``doc`` decrypted and upcast. ``decrypt``: the only encrypted fields its reader uses (a log consumer's
        handler table, ``mnemo.shared.subscriptions``); the others are left out of the payload, neither decrypted
        nor passed on as ciphertext, and with none left no data key is even looked up. An event not at its
        type's current schema version is decrypted whole: its upcasters may read any field."""
        try:
            raw = {name: doc[name] for name in _ENVELOPE_FIELDS if name in doc}
            if "event_id" not in raw and "_id" in doc:
                raw["event_id"] = doc["_id"]
            event_id = str(raw.get("event_id", "?"))
            type_name = raw["type"]
            version = int(raw["schema_version"])
            tenant_id = str(raw["tenant_id"])
            payload = dict(raw["payload"])
        except (KeyError, TypeError, ValueError) as exc:
            raise MalformedEvent(f"not a stored event: {exc!r}") from exc
        et = self.event_type(type_name, event_id)
        fields = et.encrypted_fields
        if decrypt is not None and version == et.schema_version and not fields <= frozenset(decrypt):
            fields = fields & frozenset(decrypt)
            payload = {k: v for k, v in payload.items() if k in fields or k not in et.encrypted_fields}
        if fields:
            # Tokens name their key: the owner's (possibly erased, then KeyErased) or the tenant's.
            tenant = await self.cipher.for_tenant(tenant_id, reading=(payload,))
            payload = tenant.decrypt_fields(event_id, payload, fields)
        raw["payload"] = et.upcast(version, payload)
        raw["schema_version"] = et.schema_version
        for name in ("occurred_at", "recorded_at"):
            if isinstance(raw.get(name), datetime):
                raw[name] = utc_ms(raw[name])
        try:
            return EventEnvelope.model_validate(raw)
        except ValidationError as exc:
            raise MalformedEvent(f"event {event_id}: invalid envelope: {exc}") from exc

    async def decode_all(self, docs: Iterable[StoredDoc]) -> list[EventEnvelope]:
        """``decode`` each, skipping events whose owner was erased (key destroyed): every read of the log and
        so ``mnemo replay`` treat them as gone, not as errors."""
        out = []
        for doc in docs:
            try:
                out.append(await self.decode(doc))
            except KeyErased:
                continue
        return out

    @staticmethod
    def to_wire(doc: StoredDoc) -> bytes:
        """JSON of the stored, still encrypted form (store-only keys such as ``_id``/``published`` dropped)."""
        wire = {name: doc[name] for name in _ENVELOPE_FIELDS if name in doc}
        if "event_id" not in wire and "_id" in doc:
            wire["event_id"] = doc["_id"]
        return to_json(wire)  # compact UTF-8 JSON, datetimes in ISO 8601

    async def from_wire(self, data: bytes, decrypt: Collection[str] | None = None) -> EventEnvelope:
        """A relayed event (see :meth:`decode` for ``decrypt``)."""
        try:
            doc = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise MalformedEvent(f"not JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise MalformedEvent("not a JSON object")
        return await self.decode(doc, decrypt)


def envelope_of(
    event: NewEvent, stream_id: str, version: int, recorded_at: datetime, schema_version: int
) -> EventEnvelope:
    """The envelope an appended :class:`NewEvent` becomes (``schema_version`` defaults to the type's)."""
    return _envelope(event, stream_id, version, recorded_at, schema_version, normalized=False)


def normalized_envelope_of(
    event: NewEvent, stream_id: str, version: int, recorded_at: datetime, schema_version: int
) -> EventEnvelope:
    """``EventCodec.normalize(envelope_of(...))`` built as one model instead of a model and its copy: the log's
    append makes one per event, and the copy was ~5 % of ingest's CPU samples (py-spy, ``make bench-ingest``,
    2026-11-28 09:00 UTC; 7 against 11 us per event)."""
    return _envelope(event, stream_id, version, recorded_at, schema_version, normalized=True)


def _envelope(
    event: NewEvent, stream_id: str, version: int, recorded_at: datetime, schema_version: int, *, normalized: bool
) -> EventEnvelope:
    occurred_at, payload = event.occurred_at, event.payload
    if normalized:  # what EventCodec.normalize makes of them: times to the millisecond in UTC, a JSON payload
        occurred_at, recorded_at, payload = utc_ms(occurred_at), utc_ms(recorded_at), to_jsonable_python(payload)
    return EventEnvelope(
        event_id=event.event_id,
        type=event.type,
        schema_version=event.schema_version or schema_version,
        stream_id=stream_id,
        version=version,
        tenant_id=event.tenant_id,
        occurred_at=occurred_at,
        recorded_at=recorded_at,
        correlation_id=event.correlation_id,
        causation_id=event.causation_id,
        traceparent=event.traceparent,
        payload=payload,
    )

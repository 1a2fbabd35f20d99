"""JetStream stream declarations: the one place their configuration lives.

Every process declares the streams at start (any replica may, idempotently). A missing stream is created with
the whole configuration: file storage, the dedupe window, ``streams.replicas`` copies and the stream's limits
from settings (``streams.<chat|log|dlq|points>``). An existing stream is never changed where it already has a
value: an operator may have set its limits or replicas by hand (``nats stream edit``). Only what it lacks is
added (a subject of a newer version, replacing the narrower ones it covers; a limit still at JetStream's
"none"; the chat stream's partitioning transform, on a stream made before it), and every other difference from
the settings is logged as a warning naming both values.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import ObjectStoreConfig, StorageType, StreamConfig
from nats.js.errors import NotFoundError

from mnemo.shared import partitions, subjects
from mnemo.shared.settings import StreamLimits, StreamsSettings

log = logging.getLogger(__name__)

STREAMS: tuple[tuple[str, Sequence[str]], ...] = (
    (subjects.CHAT_STREAM, subjects.CHAT_STREAM_SUBJECTS),
    (subjects.LOG_STREAM, subjects.LOG_STREAM_SUBJECTS),
    (subjects.DLQ_STREAM, subjects.DLQ_STREAM_SUBJECTS),
)
_LIMITS = {
    subjects.CHAT_STREAM: "chat",
    subjects.LOG_STREAM: "log",
    subjects.DLQ_STREAM: "dlq",
    subjects.POINTS_STREAM: "points",
}
#: JetStream's value for "not set" of each field mnemo fills in on an existing stream.
_UNSET: dict[str, tuple[Any, ...]] = {
    "max_age": (None, 0, 0.0),
    "max_bytes": (None, -1),
    "max_msgs": (None, -1),
    "max_msgs_per_subject": (None, -1),
    "deny_delete": (None, False),
}
#: Fields compared but never changed on an existing stream (replicas move data: an operator's decision; a
#: new partition count starts a new generation of partitions: ``mnemo ingest-partitions --set``).
_KEPT = ("num_replicas", "subject_transform")


def limits_of(name: str, settings: StreamsSettings) -> StreamLimits:
    """Stream ``name``'s limits from settings; a stream that is not mnemo's (a benchmark's reference stream) has
    none."""
    field = _LIMITS.get(name)
    if field is None:
        return StreamLimits()
    limits: StreamLimits = getattr(settings, field)
    return limits


def stream_config(name: str, stream_subjects: Sequence[str], settings: StreamsSettings | None = None) -> StreamConfig:
    """What mnemo declares for stream ``name``."""
    settings = settings or StreamsSettings()
    limits = limits_of(name, settings)
    chat = name == subjects.CHAT_STREAM
    return StreamConfig(
        name=name,
        subjects=list(stream_subjects),
        storage=StorageType.FILE,
        duplicate_window=subjects.DUPLICATE_WINDOW_S,
        num_replicas=settings.replicas,
        max_age=limits.max_age_s,
        max_bytes=limits.max_bytes,
        max_msgs=limits.max_msgs,
        # The chat stream maps keyed events into the ingest partitions (mnemo/shared/partitions.py).
        subject_transform=partitions.transform(settings.ingest_partitions) if chat else None,
    )


def covers(pattern: str, subject: str) -> bool:
    """Whether NATS subject ``pattern`` (``*`` one token, ``>`` the rest) matches every subject ``subject`` does."""
    p, t = pattern.split("."), subject.split(".")
    for i, token in enumerate(p):
        if token == ">":
            return len(t) > i
        if i >= len(t) or (token != "*" and token != t[i]):
            return False
    return len(p) == len(t)


def reconcile(current: StreamConfig, wanted: StreamConfig) -> tuple[dict[str, Any], list[str]]:
    """The changes to make to ``current`` (subjects and limits it lacks) and the differences to report."""
    changes: dict[str, Any] = {}
    differences: list[str] = []
    have_subjects, want_subjects = list(current.subjects or []), list(wanted.subjects or [])
    if missing := [s for s in want_subjects if s not in have_subjects]:
        # An older version's narrower subject gives way to the one covering it (JetStream refuses overlaps).
        kept = [h for h in have_subjects if not any(covers(w, h) for w in missing)]
        changes["subjects"] = kept + missing
    for field in (*_UNSET, *_KEPT):
        want, have = getattr(wanted, field), getattr(current, field)
        if want is None or want in _UNSET.get(field, ()) or want == have:
            continue
        if (field in _UNSET and have in _UNSET[field]) or (field == "subject_transform" and have is None):
            changes[field] = want
        else:
            differences.append(f"{field} is {have!r} on the server, {want!r} in the settings")
    return changes, differences


async def declare(js: JetStreamContext, config: StreamConfig) -> None:
    """Create the stream, or add to the existing one only what it lacks (see the module docstring)."""
    name = config.name or ""
    try:
        current = (await js.stream_info(name)).config
    except NotFoundError:
        await js.add_stream(config)
        return
    changes, differences = reconcile(current, config)
    for difference in differences:
        log.warning("stream %s: %s; keeping the server's (change it there: nats stream edit)", name, difference)
    if changes:
        await js.update_stream(current.evolve(**changes))
        log.info("stream %s: added %s", name, changes)


async def ensure_stream(
    js: JetStreamContext, name: str, stream_subjects: Sequence[str], settings: StreamsSettings | None = None
) -> None:
    """Create stream ``name`` or add what it lacks (idempotent, any replica may call)."""
    await declare(js, stream_config(name, stream_subjects, settings))


async def ensure_points_stream(js: JetStreamContext, settings: StreamsSettings | None = None) -> None:
    """The vector points stream of ``MNEMO_VECTORS__MODE=stream`` (``mnemo/shared/vectors/stream.py``): one message kept
    per subject (the KV pattern: a point's last upsert or tombstone, a source's last deletion), by default no
    age limit (a new replica rebuilds its shard from it), messages never deleted one by one (``mnemo replay``
    purges)."""
    config = stream_config(subjects.POINTS_STREAM, subjects.POINTS_STREAM_SUBJECTS, settings)
    await declare(js, config.evolve(max_msgs_per_subject=1, deny_delete=True))


async def ensure_uploads_bucket(js: JetStreamContext, settings: StreamsSettings | None = None) -> None:
    """The Object Store bucket of document uploads (``MNEMO_UPLOADS``): file storage, ``uploads_max_bytes`` in
    all, ``settings.replicas`` copies. Creating it again with the same configuration is a no-op; a changed
    limit is applied to its underlying stream (``OBJ_MNEMO_UPLOADS``)."""
    s = settings or StreamsSettings()
    config = ObjectStoreConfig(
        bucket=subjects.UPLOADS_BUCKET,
        description="mnemo document uploads, named <tenant_id>/...",
        storage=StorageType.FILE,
        replicas=s.replicas,
        max_bytes=s.uploads_max_bytes,
    )
    try:
        await js.object_store(subjects.UPLOADS_BUCKET)
    except NotFoundError:
        await js.create_object_store(subjects.UPLOADS_BUCKET, config=config)
        return
    info = await js.stream_info(f"OBJ_{subjects.UPLOADS_BUCKET}")
    current = info.config.max_bytes
    if current is None or current <= 0:  # only a missing limit is filled in: an operator's own value stays
        await js.update_stream(info.config.evolve(max_bytes=s.uploads_max_bytes))
    elif current != s.uploads_max_bytes:
        log.warning(
            "stream OBJ_%s keeps max_bytes=%s (settings say %s): change it on the server to apply",
            subjects.UPLOADS_BUCKET,
            current,
            s.uploads_max_bytes,
        )


async def ensure_streams(js: JetStreamContext, settings: StreamsSettings | None = None) -> None:
    for name, stream_subjects in STREAMS:
        await ensure_stream(js, name, stream_subjects, settings)
    await ensure_uploads_bucket(js, settings)

"""JetStream stream declarations: the one place their configuration lives."""

from __future__ import annotations

from collections.abc import Sequence

from nats.js import JetStreamContext
from nats.js.api import ObjectStoreConfig, StorageType, StreamConfig
from nats.js.errors import NotFoundError

from shared import subjects
from shared.settings import StreamsSettings

STREAMS: tuple[tuple[str, Sequence[str]], ...] = (
    (subjects.CHAT_STREAM, subjects.CHAT_STREAM_SUBJECTS),
    (subjects.LOG_STREAM, subjects.LOG_STREAM_SUBJECTS),
    (subjects.DLQ_STREAM, subjects.DLQ_STREAM_SUBJECTS),
)


async def ensure_stream(
    js: JetStreamContext, name: str, stream_subjects: Sequence[str], settings: StreamsSettings | None = None
) -> None:
    """Create or update one stream: file storage, the dedupe window and ``settings.replicas`` copies
    (idempotent, any replica may call)."""
    config = StreamConfig(
        name=name,
        subjects=list(stream_subjects),
        storage=StorageType.FILE,
        duplicate_window=subjects.DUPLICATE_WINDOW_S,
        num_replicas=(settings or StreamsSettings()).replicas,
    )
    try:
        await js.stream_info(name)
    except NotFoundError:
        await js.add_stream(config)
    else:
        await js.update_stream(config)


async def ensure_points_stream(js: JetStreamContext, settings: StreamsSettings | None = None) -> None:
    """The vector points stream of ``MNEMO_VECTORS__MODE=stream`` (``shared/vectors/stream.py``): one message kept
    per subject (the KV pattern: a point's last upsert or tombstone, a source's last deletion), no age limit
    (a new replica rebuilds its shard from it), messages never deleted one by one (``mnemo replay`` purges)."""
    config = StreamConfig(
        name=subjects.POINTS_STREAM,
        subjects=list(subjects.POINTS_STREAM_SUBJECTS),
        storage=StorageType.FILE,
        duplicate_window=subjects.DUPLICATE_WINDOW_S,
        num_replicas=(settings or StreamsSettings()).replicas,
        max_msgs_per_subject=1,
        deny_delete=True,
    )
    try:
        await js.stream_info(config.name or "")
    except NotFoundError:
        await js.add_stream(config)
    else:
        await js.update_stream(config)


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
    if info.config.max_bytes != s.uploads_max_bytes:
        await js.update_stream(info.config.evolve(max_bytes=s.uploads_max_bytes))


async def ensure_streams(js: JetStreamContext, settings: StreamsSettings | None = None) -> None:
    for name, stream_subjects in STREAMS:
        await ensure_stream(js, name, stream_subjects, settings)
    await ensure_uploads_bucket(js, settings)

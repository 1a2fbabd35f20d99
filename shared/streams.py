"""JetStream stream declarations: the one place their configuration lives."""

from __future__ import annotations

from collections.abc import Sequence

from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig
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


async def ensure_streams(js: JetStreamContext, settings: StreamsSettings | None = None) -> None:
    for name, stream_subjects in STREAMS:
        await ensure_stream(js, name, stream_subjects, settings)

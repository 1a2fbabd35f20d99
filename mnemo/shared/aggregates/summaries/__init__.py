"""The summaries aggregate: a conversation's summary stream (``summaries/<tenant>/<user>/<conversation>``), pure
(no I/O, the clock passed in). ``live``: the summarizer's side (the live summaries, a span's summary,
consolidation, staleness, retirement); ``owner``: the memory service's (one memory's state, its edit and delete).
``EVENTS`` names the stream's payload classes.
"""

from mnemo.shared.aggregates.summaries.live import (
    FOLDS_INTO,
    LEVEL,
    Limits,
    LiveSet,
    LiveSummary,
    RetireReason,
    Span,
    consolidated_payload,
    consolidation_id,
    due_batch,
    fold_live,
    oldest_first,
    recompute_id,
    retired_event_id,
    retirement,
    span_summary,
    stale_by,
)
from mnemo.shared.aggregates.summaries.owner import (
    EDITED,
    MemoryState,
    earlier_versions,
    edited_id,
    edited_version,
    memory_deleted_event,
    memory_edited_events,
    memory_state,
)
from mnemo.shared.events.recorded import SummaryCreated, SummaryRetired

#: The payload classes of a conversation's summary stream.
EVENTS = (SummaryCreated, SummaryRetired)

__all__ = [
    "EDITED",
    "EVENTS",
    "FOLDS_INTO",
    "LEVEL",
    "Limits",
    "LiveSet",
    "LiveSummary",
    "MemoryState",
    "RetireReason",
    "Span",
    "consolidated_payload",
    "consolidation_id",
    "due_batch",
    "earlier_versions",
    "edited_id",
    "edited_version",
    "fold_live",
    "memory_deleted_event",
    "memory_edited_events",
    "memory_state",
    "oldest_first",
    "recompute_id",
    "retired_event_id",
    "retirement",
    "span_summary",
    "stale_by",
]

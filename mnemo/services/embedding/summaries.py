"""Summaries' points (kind ``summary``), planned from the log (pure).

``summary.created`` indexes the summary text (``source_id`` = summary id), chunked by :func:`summary_chunks`,
with the summary's ``audience`` (who may be shown it) and ``summary_type``; ``summary.retired`` deletes them.
A summary created and retired in the same batch is not indexed, nor is one the summaries read model already
shows retired (a late redelivery), so a retired summary never comes back into search.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.services.embedding.chunking import chunk_text
from mnemo.services.embedding.plan import PendingPoint, Plan, epoch, of_type
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import SUMMARY_CREATED, SUMMARY_RETIRED, SummaryCreated, SummaryRetired
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import PayloadValue

# Summary chunks: at most 256 estimated tokens (the low end of the 250-400 the summaries are specified with,
# because the bundled embedder truncates at 256 and would not see the rest) with 25 tokens of overlap.
SUMMARY_CHUNK_TOKENS = 256
SUMMARY_CHUNK_OVERLAP = 25


def summary_chunks(text: str) -> list[str]:
    return [c.text for c in chunk_text(text, SUMMARY_CHUNK_TOKENS, SUMMARY_CHUNK_OVERLAP)]


def summary_points(env: EventEnvelope, model: str) -> list[PendingPoint]:
    s = SummaryCreated.model_validate(env.payload)
    payload: dict[str, PayloadValue] = {
        vp.TENANT_ID: env.tenant_id,
        vp.USER_ID: s.user_id,
        vp.CONVERSATION_ID: s.conversation_id,
        vp.KIND: vp.SUMMARY,
        vp.SOURCE_ID: s.summary_id,
        vp.SUMMARY_ID: s.summary_id,
        vp.SUMMARY_TYPE: s.summary_type,
        vp.AUDIENCE: list(s.audience),
        vp.MESSAGE_IDS: list(s.message_ids),
        vp.PARTICIPANTS: list(s.participants),
        vp.FIRST_INDEX: s.first_index,
        vp.LAST_INDEX: s.last_index,
        vp.CREATED_AT: epoch(s.end_at),
        vp.MODEL: model,
    }
    return [
        PendingPoint(
            vp.point_id(vp.SUMMARY, env.tenant_id, s.user_id, s.conversation_id, s.summary_id, i),
            text,
            payload | {vp.CHUNK: i},
        )
        for i, text in enumerate(summary_chunks(s.text))
    ]


def plan_summaries(envelopes: Sequence[EventEnvelope], plan: Plan, *, model: str, inactive: set[str]) -> None:
    """Add the summaries' deletions (``summary.retired``) and points (``summary.created``) to ``plan``.

    ``inactive``: summary ids already retired in the summaries read model; their creation is skipped, as is
    a creation retired later in the same batch (deletions run before upserts), so a late redelivery cannot
    bring a retired summary back into search.
    """
    retired: dict[tuple[str, str, str], list[str]] = {}
    for env in of_type(envelopes, SUMMARY_RETIRED):
        r = SummaryRetired.model_validate(env.payload)
        retired.setdefault((env.tenant_id, r.user_id, r.conversation_id), []).append(r.summary_id)
    gone = inactive | {sid for ids in retired.values() for sid in ids}
    plan.deletions.extend(vp.summaries_by_id(*conv, ids) for conv, ids in retired.items())
    for env in of_type(envelopes, SUMMARY_CREATED):
        if str(env.payload["summary_id"]) not in gone:
            plan.points.extend(summary_points(env, model))

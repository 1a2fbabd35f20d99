"""Document chunks' points (kind ``document_chunk``), from the lore service's ``document.*`` events (pure).

- ``document.chunked`` (version v): a point per chunk whose hash is not already indexed, i.e. not among
  the active version's hashes while v is still being imported (an unchanged chunk of a re-upload keeps its
  point and is not embedded again). Nothing for a deleted document or a version that is neither the one
  being imported nor the active one (a late redelivery of an older import). What is embedded is the chunk
  with its heading path (``embedded`` below); the text shown stays encrypted in the documents read model.
- ``document.completed`` (v): the document's points whose hash is not one of v's are deleted (the old
  version's chunks retire once the new ones are in).
- ``document.failed``: the points not of the active version are deleted (nothing half-imported stays).
- ``document.deleted``: every point of the document is deleted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mnemo.services.embedding.plan import PendingPoint, Plan
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    DOCUMENT_CHUNKED,
    DOCUMENT_COMPLETED,
    DOCUMENT_DELETED,
    DOCUMENT_EVENTS,
    DOCUMENT_FAILED,
    DocumentChunk,
)
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import PayloadValue


@dataclass(frozen=True)
class DocState:
    """The documents read model's view of one document (``mnemo.shared.readmodels.documents``)."""

    lorebook_id: str
    version: int
    active_version: int | None
    deleted: bool
    active_hashes: frozenset[str]


def documents_touched(envelopes: Iterable[EventEnvelope]) -> set[tuple[str, str]]:
    return {(e.tenant_id, str(e.payload["document_id"])) for e in envelopes if e.type in DOCUMENT_EVENTS}


def embedded(chunk: DocumentChunk) -> str:
    """The heading path, a blank line, the text (``mnemo/services/lore/documents/chunks.py`` hashes the same)."""
    return f"{chunk.heading}\n\n{chunk.text}" if chunk.heading else chunk.text


def plan_documents(
    envelopes: Sequence[EventEnvelope], plan: Plan, *, model: str, states: Mapping[tuple[str, str], DocState]
) -> None:
    for env in envelopes:
        t = env.tenant_id
        doc_id = str(env.payload["document_id"])
        state = states.get((t, doc_id))
        if env.type == DOCUMENT_DELETED.name or state is None or state.deleted:
            plan.deletions.append(vp.document_chunks(t, doc_id))
        elif env.type == DOCUMENT_COMPLETED.name:
            done = DOCUMENT_COMPLETED.parse(env.payload)
            if state.active_version == done.version:
                plan.deletions.append(vp.document_chunks(t, doc_id, done.hashes))
        elif env.type == DOCUMENT_FAILED.name:
            plan.deletions.append(vp.document_chunks(t, doc_id, state.active_hashes))
        elif env.type == DOCUMENT_CHUNKED.name:
            part = DOCUMENT_CHUNKED.parse(env.payload)
            if part.version not in (state.version, state.active_version):
                continue
            pending = part.version != state.active_version
            for chunk in part.chunks:
                if pending and chunk.hash in state.active_hashes:
                    continue
                payload: dict[str, PayloadValue] = {
                    vp.TENANT_ID: t,
                    vp.KIND: vp.DOCUMENT_CHUNK,
                    vp.LOREBOOK_ID: state.lorebook_id,
                    vp.DOCUMENT_ID: doc_id,
                    vp.SOURCE_ID: doc_id,
                    vp.CHUNK_HASH: chunk.hash,
                    vp.CHUNK: chunk.index,
                    vp.TOTAL_CHUNKS: part.total_chunks,
                    vp.PAGE: chunk.page,
                    vp.MODEL: model,
                }
                plan.points.append(PendingPoint(vp.document_point_id(t, doc_id, chunk.hash), embedded(chunk), payload))

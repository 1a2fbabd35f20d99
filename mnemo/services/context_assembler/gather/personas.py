"""The persona side of a context's gathering: the active persona, and each user line's persona name."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

from mnemo.services.context_assembler.gather.port import ContextReads
from mnemo.services.context_assembler.items import ChatLine, PersonaProfile
from mnemo_client.wire.contract import ContextAssembleRequest

T = TypeVar("T")


class PartReader(Protocol):
    """The gatherer's bounded read: ``default`` (and ``part`` in ``degraded``) when it fails or is late."""

    async def __call__(self, aw: Awaitable[T], part: str, degraded: list[str], default: T) -> T: ...


async def label_personas(
    reads: ContextReads,
    read: PartReader,
    req: ContextAssembleRequest,
    history: Sequence[ChatLine],
    persona: PersonaProfile | None,
    degraded: list[str],
) -> list[ChatLine]:
    """Each user line gets the current name of the persona that wrote it (the active one is known; the
    others are read, under the deadline). A name that cannot be read leaves the platform's author name
    as the label, and ``persona_labels`` in ``degraded``."""
    names = {persona.persona_id: persona.name} if persona is not None else {}
    others = list(dict.fromkeys(h.persona_id for h in history if h.persona_id and h.persona_id not in names))
    if others:
        found = await read(
            asyncio.gather(*(reads.persona(req.tenant_id, req.user_id, pid) for pid in others)),
            "persona_labels",
            degraded,
            [],
        )
        names.update({p.persona_id: p.name for p in found if p is not None})
    return [replace(h, persona_name=names[h.persona_id]) if h.persona_id in names else h for h in history]


async def active_persona(
    reads: ContextReads, read: PartReader, req: ContextAssembleRequest, degraded: list[str]
) -> PersonaProfile | None:
    """The request's persona, else the conversation's active one; unknown or unreadable: None, and ``persona``
    in ``degraded`` (no persona asked for or active: None alone)."""
    persona_id = req.persona_id
    if persona_id is None:
        persona_id = await read(
            reads.active_persona_id(req.tenant_id, req.user_id, req.conversation_id), "persona", degraded, None
        )
    if persona_id is None:
        return None
    persona = await read(reads.persona(req.tenant_id, req.user_id, persona_id), "persona", degraded, None)
    if persona is None and "persona" not in degraded:
        degraded.append("persona")
    return persona

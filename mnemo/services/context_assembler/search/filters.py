"""The vector filters of a context request: what the speaking bot may be shown, inside the query.

Every filter carries the tenant, the user (the conversation for messages), the kind and who may see the
point INSIDE the vector query, never applied afterwards, so a search cannot even rank what the bot may not
know (``mnemo/shared/presence.py``). The point schema they rely on is ``mnemo/shared/vectors/points.py``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from mnemo.services.context_assembler.search.timerefs import referred_window
from mnemo.shared.events.recorded import campaign_scope, character_scope, player_scope
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import Match, Range, VectorFilter
from mnemo_client.wire.contract import ContextAssembleRequest


def messages_filter(req: ContextAssembleRequest, exclude_message_ids: Sequence[str] = ()) -> VectorFilter:
    """This conversation's messages the speaking bot witnessed, minus those already in the history (excluded
    in the query too, ``must_not``, so they do not take the retrieved slots)."""
    return vp.witnessed_messages(req.tenant_id, req.user_id, req.conversation_id, req.bot_id, exclude_message_ids)


def memories_filter(req: ContextAssembleRequest, other_branches: Collection[str] = ()) -> VectorFilter:
    """The user's summaries of any conversation (past conversations are memories too) that the speaking bot
    may be shown: every message they cover was witnessed by it; none of ``other_branches`` (the other
    conversations of this one's fork family, docs/branches.md)."""
    flt = vp.visible_summaries(req.tenant_id, req.user_id, req.bot_id)
    if other_branches:
        flt = VectorFilter(flt.must, (*flt.must_not, Match(vp.CONVERSATION_ID, tuple(sorted(other_branches)))))
    return flt


def legacy_filter(req: ContextAssembleRequest) -> VectorFilter:
    """The user's legacy memories (summaries turned into lore) that apply to the speaking bot or to the
    active persona."""
    targets = (req.bot_id, req.persona_id) if req.persona_id else (req.bot_id,)
    return vp.applicable_legacy(req.tenant_id, req.user_id, targets)


def facts_filter(req: ContextAssembleRequest) -> VectorFilter:
    """The speaking bot's own facts (``audience`` is exactly the fact's character: never ``*``) in the scopes
    this request may see: this user's private ``player:<user>`` scope (the user id is in the value, so
    another user's private facts cannot match), the bot's ``character:<bot>`` scope and, with a campaign,
    ``campaign:<id>``. The read model's ``facts_for`` applies the same scopes again on read."""
    scopes = [player_scope(req.user_id), character_scope(req.bot_id)]
    if req.campaign_id is not None:
        scopes.append(campaign_scope(req.campaign_id))
    return vp.character_facts(req.tenant_id, req.bot_id, scopes)


def dated_filter(flt: VectorFilter, message: str, now: float) -> VectorFilter | None:
    """``flt`` narrowed to the dated window ``message`` refers to (``timerefs.py``), or None when it names
    none, or only a month or day without a year (no range to filter on: ranking boosts those instead)."""
    window = referred_window(message, now)
    if window is None or (window.start is None and window.end is None):
        return None
    end = None if window.end is None else window.end - 0.001  # Range bounds are inclusive; the window's end is not
    return flt.and_(Range(vp.CREATED_AT, gte=window.start, lte=end))

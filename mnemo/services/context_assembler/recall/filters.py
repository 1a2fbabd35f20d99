"""What a memory search may find, as vector filters (pure): the namespaces a :class:`Viewer` sees, per source.

Every filter carries the tenant and the visibility rule INSIDE the vector query (``mnemo/shared/namespaces.py``
for remembered memories, ``mnemo/shared/presence.py`` for summaries, the fact scopes for knowledge), so a search
never even ranks what its caller may not see; the readers check again on read.

- ``memory``: the namespaces searched, their ``audience`` as the viewer may see it (as a character: memories
  for it or for everyone), the types, the tags (any: one match; all: one match per tag), the time range.
- ``summary`` and ``legacy_lore``: the viewer's own, when its ``player:`` namespace is searched (as a
  character: the summaries of what it witnessed, the legacy memories that apply to it); episodic, untagged.
- ``knowledge``: facts in the searched namespaces (as scopes). A fact always belongs to a character, so
  outside the viewer's own namespace only as that character (``bot_id``).
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.shared.namespaces import Viewer, player
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import Match, Range, VectorFilter
from mnemo_client.wire.contract import ContextAssembleRequest
from mnemo_client.wire.memory_api_contract import MemorySearchRequest

EPISODIC = "episodic"


def _when(flt: VectorFilter, req: MemorySearchRequest) -> VectorFilter:
    if req.since is None and req.until is None:
        return flt
    start = req.since.timestamp() if req.since is not None else None
    end = req.until.timestamp() - 0.001 if req.until is not None else None  # Range is inclusive, `until` is not
    return flt.and_(Range(vp.CREATED_AT, gte=start, lte=end))


def memory_filters(viewer: Viewer, namespaces: Sequence[str], req: MemorySearchRequest) -> list[VectorFilter]:
    """One filter per distinct audience rule among ``namespaces`` (the viewer's own seen as no character
    admits any audience; the others only what is for everyone)."""
    if req.types is not None and not req.types:  # no type asked for: no memory matches (a Match needs a value)
        return []
    groups: dict[tuple[str, ...] | None, list[str]] = {}
    for ns in namespaces:
        allowed = viewer.audiences(ns)
        if allowed != ():
            groups.setdefault(allowed, []).append(ns)
    out = []
    for audiences, names in groups.items():
        flt = vp.visible_memories(viewer.tenant_id, names, audiences)
        if req.types is not None:
            flt = flt.and_(Match(vp.MEMORY_TYPE, tuple(req.types)))
        if req.tags and req.tags_match == "any":
            flt = flt.and_(Match(vp.TAGS, tuple(req.tags)))
        elif req.tags:
            flt = flt.and_(*(Match(vp.TAGS, (tag,)) for tag in req.tags))
        out.append(_when(flt, req))
    return out


def _own_episodic(viewer: Viewer, namespaces: Sequence[str], req: MemorySearchRequest) -> bool:
    """Summaries and legacy memories: the viewer's own, episodic, untagged."""
    wanted = req.types is None or EPISODIC in req.types
    return wanted and not req.tags and player(viewer.user_id) in namespaces


def summary_filter(viewer: Viewer, namespaces: Sequence[str], req: MemorySearchRequest) -> VectorFilter | None:
    if not _own_episodic(viewer, namespaces, req):
        return None
    if viewer.bot_id is not None:
        flt = vp.visible_summaries(viewer.tenant_id, viewer.user_id, viewer.bot_id)
    else:
        flt = VectorFilter.where(**{vp.TENANT_ID: viewer.tenant_id, vp.USER_ID: viewer.user_id, vp.KIND: vp.SUMMARY})
    return _when(flt, req)


def legacy_filter(viewer: Viewer, namespaces: Sequence[str], req: MemorySearchRequest) -> VectorFilter | None:
    if not _own_episodic(viewer, namespaces, req):
        return None
    if viewer.bot_id is not None:
        return _when(vp.applicable_legacy(viewer.tenant_id, viewer.user_id, (viewer.bot_id,)), req)
    own = VectorFilter.where(**{vp.TENANT_ID: viewer.tenant_id, vp.USER_ID: viewer.user_id, vp.KIND: vp.LEGACY_MEMORY})
    return _when(own, req)


def fact_filter(viewer: Viewer, namespaces: Sequence[str]) -> VectorFilter | None:
    """Types, tags and times of facts are checked on read (fact points carry none of them)."""
    if viewer.bot_id is not None:  # no namespace named: no scope of the character's facts is asked for
        return vp.character_facts(viewer.tenant_id, viewer.bot_id, list(namespaces)) if namespaces else None
    own = player(viewer.user_id)
    if own not in namespaces:
        return None
    return VectorFilter.where(**{vp.TENANT_ID: viewer.tenant_id, vp.KIND: vp.FACT, vp.SCOPE: own})


def namespaces_of(viewer: Viewer, req: MemorySearchRequest) -> list[str]:
    """The namespaces searched: those named (checked by the caller), else the viewer's own and its character's."""
    if req.namespaces is not None:
        return list(dict.fromkeys(req.namespaces))
    return viewer.namespaces()


def context_viewer(req: ContextAssembleRequest) -> Viewer:
    """A context's viewer: its user, as the speaking bot, in its campaign (if any)."""
    return Viewer(req.tenant_id, req.user_id, req.bot_id, (req.campaign_id,) if req.campaign_id else ())


def context_memories_filter(req: ContextAssembleRequest, types: Sequence[str] | None = None) -> VectorFilter:
    """The remembered memories a context may show: the user's, the campaign's and the speaking bot's
    namespaces, each for everyone or for that bot (one audience rule: the viewer is a character)."""
    viewer = context_viewer(req)
    flt = vp.visible_memories(req.tenant_id, viewer.namespaces(), (req.bot_id, "*"))
    return flt if types is None else flt.and_(Match(vp.MEMORY_TYPE, tuple(types)))

"""``mnemo.rpc.lore.list.v1``: a page of the tenant's books with what each is attached to (read model only)."""

from __future__ import annotations

from mnemo.shared.events.envelope import stream_parts
from mnemo.shared.readmodels.lore import BookListing
from mnemo.shared.readmodels.ports import LorePort
from mnemo_client.wire.lore_contract import ConversationRef, LoreBookItem, LoreListReply, LoreListRequest


def _item(state: BookListing) -> LoreBookItem:
    bots: list[str] = []
    conversations: list[ConversationRef] = []
    for target in state.targets:  # stream ids: bot/<tenant>/<bot>, conversation/<tenant>/<user>/<conversation>
        kind, parts = stream_parts(target)
        if kind == "bot" and len(parts) == 2:
            bots.append(parts[1])
        elif kind == "conversation" and len(parts) == 3:
            conversations.append(ConversationRef(user_id=parts[1], conversation_id=parts[2]))
    return LoreBookItem(
        lorebook_id=state.lorebook_id,
        name=state.name,
        owner_user_id=state.owner_user_id,
        format=state.format or "",
        entries=state.entries,
        bot_ids=bots,
        conversations=conversations,
        version=state.version,
    )


async def list_books(read_model: LorePort, req: LoreListRequest) -> LoreListReply:
    items = [_item(s) for s in await read_model.list_books(req.tenant_id, req.owner_user_id)]
    if req.bot_id is not None:
        items = [b for b in items if req.bot_id in b.bot_ids]
    page = items[req.offset : req.offset + req.limit]
    return LoreListReply(books=page, total=len(items), offset=req.offset, limit=req.limit)

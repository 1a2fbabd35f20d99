"""Ingest's own part of deciding: which stream a platform command goes to, and a run of one stream's commands
decided in order (pure, no I/O). The decisions themselves are the aggregates': a conversation's
(``mnemo.shared.aggregates.conversation``: messages, swipes, forks) and a profile's
(``mnemo.shared.aggregates.profiles``: bot and persona upserts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mnemo.shared.aggregates.conversation import (
    Branches,
    ConversationDecider,
    ConversationState,
    KnownMessage,
    MessageCommand,
)
from mnemo.shared.aggregates.decision import Decision
from mnemo.shared.aggregates.profiles import decide_profile
from mnemo.shared.events.recorded import bot_stream, conversation_stream, persona_stream
from mnemo_client.wire.contract import BotUpserted, PersonaUpserted

InboundCommand = MessageCommand | BotUpserted | PersonaUpserted


def stream_of(cmd: InboundCommand) -> str:
    """The log stream a command's events go to (also the unit of ordering and concurrency control)."""
    if isinstance(cmd, BotUpserted):
        return bot_stream(cmd.tenant_id, cmd.bot_id)
    if isinstance(cmd, PersonaUpserted):
        return persona_stream(cmd.tenant_id, cmd.user_id, cmd.persona_id)
    return conversation_stream(cmd.tenant_id, cmd.user_id, cmd.conversation_id)


def decide_stream(
    commands: Sequence[InboundCommand],
    state: ConversationState | None,
    known: Mapping[str, KnownMessage],
    branch: Branches | None = None,
) -> list[Decision]:
    """One decision per command of one stream, in order (``state`` is None for profile streams; ``branch``
    is needed when a command ``needs_timeline``)."""
    decider = ConversationDecider(state, known, branch) if state is not None else None
    decisions: list[Decision] = []
    seen: set[str] = set()
    for cmd in commands:
        if isinstance(cmd, BotUpserted | PersonaUpserted):
            decision = decide_profile(cmd)
        elif decider is None:
            raise ValueError(f"a message command needs its conversation state: {stream_of(cmd)}")
        else:
            decision = decider.decide(cmd)
        fresh = tuple(e for e in decision.events if e.event_id not in seen)  # same fact twice in one batch
        seen.update(e.event_id for e in fresh)
        decisions.append(Decision(fresh, decision.rejection))
    return decisions

"""Who may see a summary (the "hive mind" rule): the range's messages and the characters present in them.

A message is witnessed by the bots in its ``bot_ids`` and by its ``persona_id``. A range's main summary is
for the characters present in *every* message of the range; each character present in only some of them
gets its own summary of just the messages it witnessed (:func:`presence_parts`). Missing information
restricts nothing, per kind of character: a message with no ``bot_ids`` is one every bot may be shown
(``mnemo/shared/presence.py``, the rule the context-assembler applies to the messages themselves), and one with no
``persona_id`` restricts no persona.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from mnemo.shared.events.recorded import EVERYONE


@dataclass(frozen=True)
class RangeMessage:
    message_id: str
    index: int
    role: str
    author_name: str
    content: str
    created_at: datetime
    bot_ids: tuple[str, ...] = ()
    persona_id: str | None = None

    @property
    def witnesses(self) -> tuple[str, ...]:
        """The characters named present: the bots in the scene and the persona used."""
        return (*self.bot_ids, self.persona_id) if self.persona_id else self.bot_ids

    def seen_by_bot(self, bot_id: str) -> bool:
        """``bot_id`` was in the scene, or the message names no bot (no scene information)."""
        return not self.bot_ids or bot_id in self.bot_ids

    def seen_by_persona(self, persona_id: str) -> bool:
        """``persona_id`` was used, or the message names no persona."""
        return self.persona_id is None or self.persona_id == persona_id


@dataclass(frozen=True)
class AudiencePart:
    """One summary to write for a range: its messages and the characters who may be shown it.

    ``character_id`` is None for the range's main summary (all its messages), else the one character
    present in only some of the messages, whose summary covers exactly the messages it witnessed.
    """

    audience: tuple[str, ...]
    messages: tuple[RangeMessage, ...]
    character_id: str | None = None


def presence_parts(messages: Sequence[RangeMessage]) -> list[AudiencePart]:
    """The summaries a range needs so that no summary tells a character what it did not witness.

    - No message names a bot: one summary, audience ``["*"]``: every bot may be shown each of these messages,
      so every bot may be shown their summary (personas are not told apart without scene information).
    - Otherwise the main summary's audience is the bots, then the personas, that saw every message (see
      :meth:`RangeMessage.seen_by_bot` / :meth:`~RangeMessage.seen_by_persona`), and every character that saw
      only some of them gets a summary of exactly those. When nobody saw them all there is no main summary:
      an empty audience would read as "no presence information" to some readers, so it is never written.
    Characters are in order of first appearance (bots first), so the result is deterministic.
    """
    if not any(m.bot_ids for m in messages):
        return [AudiencePart((EVERYONE,), tuple(messages))]
    bots = list(dict.fromkeys(b for m in messages for b in m.bot_ids))
    personas = list(dict.fromkeys(m.persona_id for m in messages if m.persona_id))
    saw: dict[str, tuple[RangeMessage, ...]] = {
        **{b: tuple(m for m in messages if m.seen_by_bot(b)) for b in bots},
        **{p: tuple(m for m in messages if m.seen_by_persona(p)) for p in personas},
    }
    common = tuple(c for c, seen in saw.items() if len(seen) == len(messages))
    parts = [AudiencePart(common, tuple(messages))] if common else []
    parts += [AudiencePart((c,), seen, c) for c, seen in saw.items() if c not in common]
    return parts


def participants_of(messages: Sequence[RangeMessage]) -> list[str]:
    """Bots present and personas used in the range, in order of first appearance, without repeats."""
    seen: dict[str, None] = {}
    for m in messages:
        for b in m.bot_ids:
            seen.setdefault(b, None)
        if m.persona_id:
            seen.setdefault(m.persona_id, None)
    return list(seen)

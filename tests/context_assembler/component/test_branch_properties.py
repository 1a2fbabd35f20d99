"""Swipes and forks as properties, through ingest, the memory-extractor and the context-assembler (in memory).

Every message tells a secret with a word of its own, so the word names what it came from wherever it shows up:
in the history, or in the knowledge section as the fact the listening bot learned from it.

- Swipes: random alternatives, selections and edits of random messages, in random batches: the history and
  the knowledge hold the current alternative of every message and nothing of any other.
- Both replay: read models folded afresh from the log answer as the live ones did.
- Forks: a parent with random deletions is forked at a random live message; then the parent (new messages, an
  edit of a message the fork kept) and the fork (its own messages) go on, interleaved at random. The fork
  shows the parent's live messages up to the fork point as they were when forked, and its own; the parent
  never shows the fork's; neither shows the other's facts.
"""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemo.shared import subjects
from tests.branch_chain import Chain, branch_chain

T, U = "t1", "u1"
T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


def said(conv: str, message_id: str, minute: int, secret: str, *, bot_turn: bool, **extra: Any) -> tuple[str, dict]:
    """A message telling ``secret``: the bard's (the rook listens) or Ana's (both bots listen)."""
    author = ("bard", "Bard", "assistant") if bot_turn else ("ana", "Ana", "user")
    return subjects.MESSAGE_CREATED, {
        "tenant_id": T, "user_id": U, "conversation_id": conv, "message_id": message_id, "role": author[2],
        "author_id": author[0], "author_name": author[1], "content": f"The secret is {secret}.",
        "created_at": T0 + timedelta(minutes=minute), "bot_ids": ["bard", "rook"], "persona_id": "ana", **extra,
    }  # fmt: skip


def words(sections: dict[str, str], name: str, among: set[str]) -> set[str]:
    text = sections.get(name, "")
    return {w for w in among if f"secret is {w}." in text}


async def same_after_replay(chain: Chain, conversations: list[str]) -> None:
    fresh, live = await chain.replayed(), chain.reads
    for conv in conversations:
        assert await fresh.models.recent(T, U, conv, 200) == await live.models.recent(T, U, conv, 200)
        assert await fresh.models.family(T, U, conv) == await live.models.family(T, U, conv)
    for bot in ("bard", "rook"):
        assert await fresh.knowledge.owned(T, bot, U) == await live.knowledge.owned(T, bot, U)


# --- swipes ---------------------------------------------------------------------------------------------------
SWIPE_OPS = st.lists(
    st.tuples(st.sampled_from(["swipe", "select", "edit"]), st.integers(0, 5), st.integers(0, 9)), max_size=14
)


async def swipes_scenario(slots: int, ops: list[tuple[str, int, int]], cuts: list[int]) -> None:
    async with branch_chain() as chain:
        alts: list[list[list[str]]] = []  # slot -> alternatives as [message id, secret word]
        current: list[int] = []
        await chain.send(*(said("c", f"m{s}", s, f"amber{s}x0", bot_turn=True) for s in range(slots)))
        for s in range(slots):
            alts.append([[f"m{s}", f"amber{s}x0"]])
            current.append(0)
        wire: list[tuple[str, dict]] = []
        for n, (op, slot, pick) in enumerate(ops):
            s = slot % slots
            if op == "swipe":
                word = f"amber{s}x{len(alts[s])}"
                mid = f"m{s}s{len(alts[s])}"
                wire.append(said("c", mid, 100 + n, word, bot_turn=True, swipe_of=alts[s][pick % len(alts[s])][0]))
                alts[s].append([mid, word])
                current[s] = len(alts[s]) - 1
            elif op == "select":
                k = pick % len(alts[s])
                wire.append((subjects.MESSAGE_SWIPE_SELECTED, {"tenant_id": T, "user_id": U, "conversation_id": "c",
                             "message_id": alts[s][k][0], "selected_at": T0 + timedelta(hours=1, minutes=n)}))  # fmt: skip
                current[s] = k
            else:
                word = f"amber{s}e{n}"
                wire.append((subjects.MESSAGE_EDITED, {"tenant_id": T, "user_id": U, "conversation_id": "c",
                             "message_id": alts[s][current[s]][0], "content": f"The secret is {word}.",
                             "edited_at": T0 + timedelta(hours=2, minutes=n)}))  # fmt: skip
                alts[s][current[s]][1] = word
        bounds = sorted({0, len(wire), *(c % (len(wire) + 1) for c in cuts)})
        for start, end in itertools.pairwise(bounds):
            assert await chain.send(*wire[start:end]) == []

        shown = {alts[s][current[s]][1] for s in range(slots)}
        every = {w for slot in alts for _, w in slot} | {f"amber{s}x{k}" for s in range(slots) for k in range(12)}
        sections = await chain.context(T, U, "c", "rook")
        assert words(sections, "history", every) == shown
        assert words(sections, "knowledge", every) == shown
        await same_after_replay(chain, ["c"])


@PROPERTY
@given(slots=st.integers(1, 4), ops=SWIPE_OPS, cuts=st.lists(st.integers(0, 20), max_size=3))
def test_only_the_current_alternatives_are_history_and_knowledge(
    slots: int, ops: list[tuple[str, int, int]], cuts: list[int]
) -> None:
    asyncio.run(swipes_scenario(slots, ops, cuts))


# --- forks ----------------------------------------------------------------------------------------------------
@st.composite
def fork_cases(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 7))
    at = draw(st.integers(0, n - 1))
    deleted = draw(st.sets(st.integers(0, n - 1).filter(lambda i: i != at), max_size=2))
    later = ["q"] * draw(st.integers(0, 4)) + ["r"] * draw(st.integers(0, 4))
    if at not in deleted and draw(st.booleans()):
        later.append("edit")
    return {"n": n, "at": at, "deleted": deleted, "later": draw(st.permutations(later))}


async def fork_scenario(case: dict[str, Any]) -> None:
    n, at, deleted, later = case["n"], case["at"], case["deleted"], case["later"]
    async with branch_chain() as chain:
        await chain.send(*(said("p", f"m{i}", i, f"pword{i}", bot_turn=i % 2 == 1) for i in range(n)))
        gone = [(subjects.MESSAGE_DELETED, {"tenant_id": T, "user_id": U, "conversation_id": "p",
                 "message_id": f"m{i}", "deleted_at": T0 + timedelta(hours=1)}) for i in sorted(deleted)]  # fmt: skip
        fork = (subjects.CONVERSATION_FORKED, {"tenant_id": T, "user_id": U, "conversation_id": "f",
                "parent_conversation_id": "p", "from_message_id": f"m{at}", "forked_at": T0 + timedelta(hours=2)})  # fmt: skip
        assert await chain.send(*gone, fork) == []
        kept = {f"pword{i}" for i in range(at + 1) if i not in deleted}
        parent_words = {f"pword{i}" for i in range(n) if i not in deleted}
        fork_words, every = set(kept), {f"pword{i}" for i in range(n)}
        for j, step in enumerate(later):
            if step == "edit":  # the parent changes a message the fork kept: the fork keeps the old text
                body = {"tenant_id": T, "user_id": U, "conversation_id": "p", "message_id": f"m{at}",
                        "content": "The secret is pedited.", "edited_at": T0 + timedelta(hours=3)}  # fmt: skip
                assert await chain.send((subjects.MESSAGE_EDITED, body)) == []
                parent_words = (parent_words - {f"pword{at}"}) | {"pedited"}
                every.add("pedited")
                continue
            conv = "p" if step == "q" else "f"
            word = f"{step}word{j}"
            assert await chain.send(said(conv, f"{conv}-{j}", 200 + j, word, bot_turn=j % 2 == 0)) == []
            (parent_words if conv == "p" else fork_words).add(word)
            every.add(word)

        for conv, expected in (("f", fork_words), ("p", parent_words)):
            for bot in ("bard", "rook"):
                sections = await chain.context(T, U, conv, bot)
                assert words(sections, "history", every) == expected, (conv, bot)
                learned = {w for w in expected if not _said_by(w, bot, at, later)}
                assert words(sections, "knowledge", every) == learned, (conv, bot)
        await same_after_replay(chain, ["p", "f"])


def _said_by(word: str, bot: str, at: int, later: list[str]) -> bool:
    """Whether ``bot`` said the message of ``word`` (an author does not learn what it said)."""
    if bot != "bard":
        return False
    if word.startswith("pword"):
        return int(word.removeprefix("pword")) % 2 == 1
    if word == "pedited":
        return at % 2 == 1
    return int(word[5:]) % 2 == 0  # qword<j> / rword<j>: the bard says the even steps


@PROPERTY
@given(case=fork_cases())
def test_nothing_crosses_between_a_fork_and_its_parent(case: dict[str, Any]) -> None:
    asyncio.run(fork_scenario(case))

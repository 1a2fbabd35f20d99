"""`make bench-retrieval`: turn-level recall of the context assembler on LoCoMo-family chats, beside BM25 and
dense baselines computed in the same run on the same turns and questions.

What it does, and why each choice:
- A fresh embedded stack in a temporary directory (nats-server, SecantusDB, Qdrant Edge, the bundled model,
  all five services on one core), as ``make run`` runs it, so the figure is the product's, not a model's.
- Every chat is replayed through the public contract only (plain nats-py, JSON): one tenant per run, one
  conversation per chat file, each turn a ``mnemo.chat.message.created.v1`` with its own time (the turn's
  ``date_time``, else its session's date plus one second per turn to keep the order), ``message_id`` = the
  turn's ``dia_id``, speaker 1 as ``user`` and speaker 2 as the bot (``assistant``). A shared image's caption
  is part of the text, as a platform would show it to the model.
- Questions are asked only once the pipeline is quiet: the JetStream consumers of ingest (on MNEMO_CHAT)
  and of embedding, summarizer and memory-extractor (on MNEMO_LOG) have nothing pending or unacknowledged,
  and the log stream stopped growing. Waiting for all four, not only ingest and embedding, keeps background
  summarising from competing with the questions for the core.
- Each question (categories other than 5 with evidence that exists) is a ``user_message`` on
  ``mnemo.rpc.context.assemble.v1``. The assembler is configured for the run through its settings:
  ``retrieved_limit`` 40 (``--retrieved-limit``) and ``min_score`` 0, so the 40 best-scored turns always
  come back (recall@k reads the first k; a budgeted reply packs as many as its budget holds), and
  ``history_limit`` 4 (``--history-limit``): the history window is the last turns of the chat, which the
  assembler excludes from the vector search; a large window would hand over late evidence for free and
  hide it from the ranking. Recall@k ranks the reply's ``message`` sources that carry a ``score``.
- Recall at a token budget asks again with ``max_tokens`` 500, 1,000, 2,000 and 4,000 and counts every
  ``message`` source (retrieved and history) and every turn a memory or fact of the reply cites
  (``bench/retrieval_report.py``: as the LoCoMo harness credits what it retrieves), i.e. what the LLM would
  actually see (the turns-only figure is printed beside it), and reports the share of
  the budget each section used (the sections compete for it: ``mnemo/services/context_assembler/assemble/packing.py``). The baselines get the same budget
  for their own ranked turns alone (rendered as the assembler renders a retrieved turn, counted with
  ``mnemo.shared.tokens.estimate_tokens``, skipping what does not fit); the system also pays for its system text
  and history out of the budget, so this comparison favours the baselines slightly.
- Evidence ids are cleaned as the dataset README says: split on ``;``, ``,`` and spaces, ids that name no
  turn dropped (and counted); a question left without evidence is skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import re
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nats
import numpy as np
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from bench.common import embedded_backends, machine, print_result
from bench.retrieval_baselines import BM25, dense_rank
from bench.retrieval_report import (
    BUDGETS,
    KS,
    Result,
    budget_recall,
    budget_sections,
    budget_shares,
    is_budget_note,
    message_sources,
    print_table,
    seen_turns,
    summarize,
)
from mnemo.runtime.stack import all_services
from mnemo.shared import subjects
from mnemo.shared.bootstrap import Core
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.settings import Settings
from mnemo.shared.tokens import estimate_tokens

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "eval" / "realtalk"
# Large enough that nothing retrieved is cut by the budget: recall@k must measure ranking, not packing.
UNBOUNDED_TOKENS = 100_000
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_RANGE = re.compile(r"D(\d+):(\d+)-(?:D\1:)?(\d+)")


# --- Dataset ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    role: str  # "user" (speaker 1) or "assistant" (speaker 2, the bot)
    text: str
    created_at: datetime


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass
class Chat:
    """One file: one conversation between a user (speaker 1) and a bot (speaker 2)."""

    key: str  # the file name without extension; the conversation id
    user_name: str
    bot_name: str
    turns: list[Turn]
    questions: list[Question]
    dropped_evidence_ids: int = 0
    skipped_questions: int = 0

    @property
    def conversation_id(self) -> str:
        return self.key

    @property
    def user_id(self) -> str:
        return f"user-{self.key}"

    @property
    def bot_id(self) -> str:
        return f"bot-{slug(self.bot_name)}"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def parse_turn_time(value: str) -> datetime | None:
    """``"DD.MM.YYYY, HH:MM:SS"`` (REALTALK's per-turn time)."""
    try:
        return datetime.strptime(value.strip(), "%d.%m.%Y, %H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return None


def parse_session_time(value: str) -> datetime | None:
    """``"1:56 pm on 8 May, 2023"`` (LoCoMo's per-session time), with full or abbreviated month names."""
    text = " ".join(value.split())
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("clean_text") or turn.get("text") or "").strip()
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text = f"{text} [shares an image: {caption.strip()}]".strip()
    return text


def session_numbers(chat: dict[str, Any]) -> list[int]:
    numbers = []
    for key, value in chat.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if m and isinstance(value, list):
            numbers.append(int(m.group(1)))
    return sorted(numbers)


def evidence_ids(evidence: Sequence[Any]) -> list[str]:
    """Evidence ids as written, split on ``;``, ``,`` and spaces, with three repairs of what REALTALK's
    annotators wrote: ``"D 2:18"`` (a stray space), ``"D5:3."`` (a trailing dot) and ``"D12:3-D12:5"`` (a
    range within one session, expanded). Without them 10 more questions would have no evidence at all."""
    out: list[str] = []
    for item in evidence:
        text = re.sub(r"D\s+(?=\d)", "D", str(item))
        for token in _EVIDENCE_SPLIT.split(text):
            token = token.rstrip(".")
            if m := _RANGE.fullmatch(token):
                session, first, last = m.group(1), int(m.group(2)), int(m.group(3))
                out.extend(f"D{session}:{n}" for n in range(first, last + 1))
            elif token:
                out.append(token)
    return out


def load_chat(path: Path) -> Chat:
    raw: dict[str, Any] = json.loads(path.read_text())
    names = raw.get("name") or {}
    user_name, bot_name = str(names.get("speaker_1", "user")), str(names.get("speaker_2", "bot"))
    turns: list[Turn] = []
    previous = datetime(2000, 1, 1, tzinfo=UTC)
    for n in session_numbers(raw):
        session_start = parse_session_time(str(raw.get(f"session_{n}_date_time", "")))
        for i, t in enumerate(raw[f"session_{n}"]):
            text = turn_text(t)
            if not text or not t.get("dia_id"):
                continue
            when = parse_turn_time(str(t.get("date_time", "")))
            if when is None and session_start is not None:
                when = session_start + timedelta(seconds=i)
            when = when or previous + timedelta(seconds=1)
            previous = when
            # Names are matched case-insensitively: the header and the turns do not always agree ("elise").
            is_bot = str(t.get("speaker", "")).strip().lower() == bot_name.strip().lower()
            turns.append(
                Turn(str(t["dia_id"]), str(t.get("speaker", "")), "assistant" if is_bot else "user", text, when)
            )
    chat = Chat(path.stem, user_name, bot_name, turns, [])
    known = {t.dia_id for t in turns}
    for qa in raw.get("qa", []):
        category = int(qa.get("category", 0))
        ids = evidence_ids(qa.get("evidence") or [])
        valid = tuple(dict.fromkeys(e for e in ids if e in known))
        chat.dropped_evidence_ids += len(ids) - len([e for e in ids if e in known])
        if category == 5 or not valid or not str(qa.get("question", "")).strip():
            chat.skipped_questions += 1
            continue
        chat.questions.append(Question(str(qa["question"]), category, valid))
    return chat


def load_chats(data: Path, limit: int | None) -> list[Chat]:
    paths = sorted(data.glob("*.json")) if data.is_dir() else [data]
    if not paths:
        raise SystemExit(f"no .json files under {data}")
    chats = [load_chat(p) for p in paths]
    chats = [c for c in chats if c.turns]
    return chats[:limit] if limit else chats


# --- The embedded stack ---------------------------------------------------------------------------------


def embedded_stack(settings: Settings) -> contextlib.AbstractAsyncContextManager[Core]:
    """All services of the catalog on one core, as ``make run`` runs them (no demo, no signal handling).
    The assembler's settings are read from the environment when its router is built."""
    return all_services(settings)


def assembler_env(history_limit: int, retrieved_limit: int = 40) -> dict[str, str]:
    """Environment for ``AssemblerSettings`` for the run (see the module docstring)."""
    return {
        "MNEMO_CONTEXT_ASSEMBLER__RETRIEVED_LIMIT": str(max(retrieved_limit, *KS)),
        "MNEMO_CONTEXT_ASSEMBLER__MIN_SCORE": "0",
        "MNEMO_CONTEXT_ASSEMBLER__HISTORY_LIMIT": str(history_limit),
        # min_history above the history window would be meaningless; keep them consistent.
        "MNEMO_CONTEXT_ASSEMBLER__MIN_HISTORY": str(min(history_limit, 4)),
        # Recall, not latency, is measured here: on a loaded machine a read past the service's deadlines would
        # turn into a missing section (``degraded``) and count as lost evidence.
        "MNEMO_CONTEXT_ASSEMBLER__READ_TIMEOUT_S": "30",
        "MNEMO_CONTEXT_ASSEMBLER__DEADLINE_S": "60",
        "MNEMO_CONTEXT_ASSEMBLER__RETRIEVAL_TIMEOUT_S": "30",
    }


def configure_assembler(history_limit: int, retrieved_limit: int = 40) -> dict[str, str]:
    """Set :func:`assembler_env` (read when the assembler's router is built, so this runs before)."""
    env = assembler_env(history_limit, retrieved_limit)
    os.environ.update(env)
    return env


# --- Replay ---------------------------------------------------------------------------------------------


def message_payloads(chat: Chat, tenant: str) -> list[tuple[str, dict[str, Any]]]:
    """(Nats-Msg-Id, payload) of every turn; the header id is unique across chats (dia_ids are not)."""
    out = []
    for t in chat.turns:
        is_user = t.role == "user"
        payload = {
            "tenant_id": tenant,
            "user_id": chat.user_id,
            "conversation_id": chat.conversation_id,
            "message_id": t.dia_id,
            "role": t.role,
            "author_id": f"persona-{slug(chat.user_name)}" if is_user else chat.bot_id,
            "author_name": t.speaker,
            "content": t.text,
            "created_at": t.created_at.isoformat(),
            "bot_ids": [chat.bot_id],
        }
        out.append((f"{chat.conversation_id}:{t.dia_id}", payload))
    return out


async def replay(js: JetStreamContext, chats: Sequence[Chat], tenant: str, window: int = 256) -> None:
    """Bots first, then each chat's turns in order; pipelined publishes, each awaiting its JetStream ack
    (one connection keeps the order within a window, and windows are sequential)."""
    for chat in chats:
        bot = {"tenant_id": tenant, "bot_id": chat.bot_id, "name": chat.bot_name, "updated_at": "2000-01-01T00:00:00Z"}
        await js.publish(subjects.BOT_UPSERTED, json.dumps(bot).encode(), headers={"Nats-Msg-Id": f"bot:{chat.key}"})
    pending = [item for chat in chats for item in message_payloads(chat, tenant)]
    total = len(pending)
    start = time.perf_counter()
    next_report = 1000
    for i in range(0, total, window):
        chunk = pending[i : i + window]
        await asyncio.gather(
            *(
                js.publish(subjects.MESSAGE_CREATED, json.dumps(p).encode(), headers={"Nats-Msg-Id": msg_id})
                for msg_id, p in chunk
            )
        )
        done = i + len(chunk)
        if done >= next_report or done == total:
            print(f"  published {done:,}/{total:,} turns ({time.perf_counter() - start:.1f}s)", flush=True)
            next_report += 1000


async def wait_quiet(js: JetStreamContext, turns: int, timeout_s: float = 3600, poll_s: float = 1.0) -> float:
    """Seconds until every durable consumer of MNEMO_CHAT (ingest) and MNEMO_LOG (embedding, summarizer,
    memory-extractor, and whatever the catalog adds) has nothing pending or unacknowledged, and neither
    stream grew since the previous poll (see the module docstring). Consumers are listed from JetStream, so
    a service added to the catalog is waited for without a change here.

    Quiet must hold on two polls in a row: ingest publishes to the log in the background after its ack, so
    one idle snapshot could fall between an ack and the relayed event."""
    start = time.perf_counter()
    last_report = 0.0
    quiet_polls = 0
    last_seqs: tuple[int, ...] = ()
    while True:
        seqs = tuple([(await js.stream_info(s)).state.last_seq for s in (subjects.CHAT_STREAM, subjects.LOG_STREAM)])
        backlog: dict[str, int] = {}
        for stream in (subjects.CHAT_STREAM, subjects.LOG_STREAM):
            for info in await js.consumers_info(stream):
                name = (info.name or "?").removeprefix("mnemo_").removesuffix("_main")
                backlog[name] = (info.num_pending or 0) + (info.num_ack_pending or 0)
        quiet = not any(backlog.values()) and seqs == last_seqs and seqs[1] >= turns
        quiet_polls = quiet_polls + 1 if quiet else 0
        last_seqs = seqs
        elapsed = time.perf_counter() - start
        if quiet_polls >= 2:
            return elapsed
        if elapsed - last_report >= 10:
            last_report = elapsed
            print(f"  waiting for the pipeline ({elapsed:.0f}s): backlog {backlog}, log events {seqs[1]:,}", flush=True)
        if elapsed > timeout_s:
            raise TimeoutError(f"pipeline not quiet after {timeout_s}s: {backlog}")
        await asyncio.sleep(poll_s)


# --- Questions ------------------------------------------------------------------------------------------


async def assemble(nc: NatsClient, request: dict[str, Any]) -> dict[str, Any]:
    msg = await nc.request(subjects.CONTEXT_ASSEMBLE, json.dumps(request).encode(), timeout=120)
    reply: dict[str, Any] = json.loads(msg.data)
    if "error" in reply:
        raise RuntimeError(f"assemble failed: {reply['error']}")
    return reply


def memory_sources(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """The reply's memories and facts with the turns they cite, their score and, where the section's lines
    can be matched to them one to one, the tokens of their line (what packing paid for them)."""
    lines: dict[str, list[str]] = {}
    for sec in reply.get("sections", []):
        lines[sec["name"]] = sec["text"].split("\n")[1:]  # the header first, then one line per item
    slot = {"summary": "memories", "legacy_memory": "legacy_memories", "knowledge": "knowledge"}
    out: list[dict[str, Any]] = []
    for kind, section in slot.items():
        items = [s for s in reply.get("sources", []) if s.get("kind") == kind]
        texts = lines.get(section, [])
        for n, s in enumerate(items):
            tokens = estimate_tokens(texts[n]) + 1 if len(texts) == len(items) else None
            out.append({k: s.get(k) for k in ("kind", "id", "score", "message_ids")} | {"tokens": tokens})
    return out


async def ask_all(nc: NatsClient, chats: Sequence[Chat], tenant: str, concurrency: int) -> list[Result]:
    """Every question three times (unbounded for recall@k, then at each budget), ``concurrency`` at a time."""
    gate = asyncio.Semaphore(concurrency)
    total = sum(len(c.questions) for c in chats)
    done = 0
    start = time.perf_counter()

    async def ask(chat: Chat, q: Question) -> Result:
        nonlocal done
        base = {
            "tenant_id": tenant,
            "user_id": chat.user_id,
            "conversation_id": chat.conversation_id,
            "bot_id": chat.bot_id,
            "user_message": q.text,
        }
        async with gate:
            replies = await asyncio.gather(
                *(assemble(nc, base | {"max_tokens": m}) for m in (UNBOUNDED_TOKENS, *BUDGETS))
            )
        scored = [s for s in message_sources(replies[0]) if s.get("score") is not None]
        result = Result(chat.key, q.category, q.evidence)
        result.system = [s["id"] for s in sorted(scored, key=lambda s: -float(s["score"]))]
        result.scored = [(s["id"], float(s["score"])) for s in sorted(scored, key=lambda s: -float(s["score"]))]
        result.history = [s["id"] for s in message_sources(replies[0]) if s.get("score") is None]
        budgeted = list(zip(BUDGETS, replies[1:], strict=True))
        result.budget = {m: seen_turns(r) for m, r in budgeted}
        result.budget_turns = {m: {s["id"] for s in message_sources(r)} for m, r in budgeted}
        result.memories = memory_sources(replies[0])
        result.sections = {
            m: {sec["name"]: int(sec["tokens"]) for sec in r.get("sections", [])}
            for m, r in zip(BUDGETS, replies[1:], strict=True)
        }
        result.degraded = sorted({d for r in replies for d in r.get("degraded", [])})
        done += 1
        if done % 100 == 0 or done == total:
            print(f"  asked {done}/{total} questions ({time.perf_counter() - start:.1f}s)", flush=True)
        return result

    return list(await asyncio.gather(*(ask(c, q) for c in chats for q in c.questions)))


# --- Baselines ------------------------------------------------------------------------------------------


def rendered_tokens(turn: Turn) -> int:
    """Tokens of a turn as the assembler renders a retrieved one (``- [NN% relevant] Name (role): text``)."""
    return estimate_tokens(f"- [00% relevant] {turn.speaker} ({turn.role}): {turn.text}") + 1


def fill_budget(ranked: Iterable[int], costs: Sequence[int], budget: int) -> set[int]:
    """Best first, skipping what does not fit, as the assembler fills its scored sections."""
    kept: set[int] = set()
    used = 0
    for i in ranked:
        if used + costs[i] <= budget:
            kept.add(i)
            used += costs[i]
    return kept


def run_baselines(chats: Sequence[Chat], results: Sequence[Result]) -> None:
    """Fill in the BM25 and dense rankings of every result (same turn texts, question text as the query)."""
    embedder = BundledEmbedder()
    by_chat: dict[str, list[Result]] = {}
    for r in results:
        by_chat.setdefault(r.chat, []).append(r)
    for chat in chats:
        docs = [t.text for t in chat.turns]
        ids = [t.dia_id for t in chat.turns]
        costs = [rendered_tokens(t) for t in chat.turns]
        bm25 = BM25(docs)
        doc_vectors = embedder.embed_array(docs)
        questions = [q.text for q in chat.questions]
        query_vectors = embedder.embed_array(questions) if questions else np.zeros((0, doc_vectors.shape[1]))
        for r, q, qv in zip(by_chat.get(chat.key, []), chat.questions, query_vectors, strict=True):
            bm25_order = bm25.rank(q.text, len(docs))
            dense_order = dense_rank(doc_vectors, qv, len(docs))
            r.bm25 = [ids[i] for i in bm25_order[: max(KS)]]
            r.dense = [ids[i] for i in dense_order[: max(KS)]]
            r.bm25_budget = {m: {ids[i] for i in fill_budget(bm25_order, costs, m)} for m in BUDGETS}
            r.dense_budget = {m: {ids[i] for i in fill_budget(dense_order, costs, m)} for m in BUDGETS}
        print(f"  baselines: {chat.key} ({len(docs):,} turns, {len(questions)} questions)", flush=True)


async def main(
    data: Path,
    limit_chats: int | None,
    history_limit: int,
    concurrency: int,
    retrieved_limit: int = 40,
    limit_questions: int | None = None,
    dump: Path | None = None,
) -> dict[str, Any]:
    chats = load_chats(data, limit_chats)
    if limit_questions is not None:
        for chat in chats:
            chat.questions = chat.questions[:limit_questions]
    turns = sum(len(c.turns) for c in chats)
    questions = sum(len(c.questions) for c in chats)
    dropped = sum(c.dropped_evidence_ids for c in chats)
    skipped = sum(c.skipped_questions for c in chats)
    print(f"{len(chats)} chats, {turns:,} turns, {questions} questions ({skipped} skipped: category 5 or no valid")
    print(f"evidence; {dropped} evidence ids dropped as unknown or malformed) from {data}", flush=True)
    assembler_env = configure_assembler(history_limit, retrieved_limit)
    tenant = f"bench-retrieval-{uuid.uuid4().hex[:8]}"
    timings: dict[str, float] = {}
    async with embedded_backends() as settings, embedded_stack(settings):
        nc = await nats.connect(settings.nats_url)
        try:
            js = nc.jetstream(timeout=30)
            print("replaying the chats through mnemo.chat.message.created.v1 ...", flush=True)
            start = time.perf_counter()
            await replay(js, chats, tenant)
            await wait_quiet(js, turns)
            timings["replay_s"] = round(time.perf_counter() - start, 1)
            print(f"  pipeline quiet after {timings['replay_s']}s ({turns / timings['replay_s']:.0f} turns/s)")
            print("asking the questions through mnemo.rpc.context.assemble.v1 ...", flush=True)
            start = time.perf_counter()
            results = await ask_all(nc, chats, tenant, concurrency)
            timings["questions_s"] = round(time.perf_counter() - start, 1)
        finally:
            await nc.drain()
    print("baselines (BM25, dense) over the same turns ...", flush=True)
    start = time.perf_counter()
    await asyncio.to_thread(run_baselines, chats, results)
    timings["baselines_s"] = round(time.perf_counter() - start, 1)

    if dump is not None:
        dump.write_text("".join(json.dumps(dataclasses.asdict(r), default=sorted) + "\n" for r in results))
        print(f"per-question results written to {dump}")
    overall = summarize(results)
    categories = sorted({r.category for r in results})
    by_category = {str(c): summarize([r for r in results if r.category == c]) for c in categories}
    print_table(overall, by_category)
    section_use = budget_sections(results)
    shares = budget_shares(section_use)
    for m, use in section_use.items():
        print(f"mean tokens per section at max_tokens {m}: {use}")
        print(f"  share of the budget: {shares[m]}")
    budget_notes = sum(1 for r in results if any(is_budget_note(d) for d in r.degraded))
    print(f"{budget_notes} questions had a fact or constant lore entry left out by a budget (named in degraded)")
    failures = [[d for d in r.degraded if not is_budget_note(d)] for r in results]
    degraded = sum(1 for f in failures if f)
    if degraded:
        print(f"warning: {degraded} questions got a degraded reply: {sorted({d for f in failures for d in f})}")
    best = max(overall["bm25"]["recall@10"], overall["dense"]["recall@10"])
    print(f"system recall@10 - best baseline: {overall['system']['recall@10'] - best:+.3f} (goal: +0.15)", flush=True)
    for tokens in BUDGETS:
        best_at = max(budget_recall(overall, b, tokens) for b in ("bm25", "dense"))
        gain = budget_recall(overall, "system", tokens) - best_at
        print(f"system recall within {tokens:,} tokens - best baseline: {gain:+.3f}")
    return {
        **overall,
        "by_category": by_category,
        "chats": len(chats),
        "turns": turns,
        "dropped_evidence_ids": dropped,
        "skipped_questions": skipped,
        "degraded_replies": degraded,
        "budget_sections": section_use,
        "budget_shares": shares,
        "budget_notes": budget_notes,
        "assembler": assembler_env,
        **timings,
        **machine(),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LoCoMo-family .json file or a folder")
    parser.add_argument("--limit-chats", type=int, default=None, help="only the first N chats (a quick run)")
    parser.add_argument(
        "--history-limit", type=int, default=4, help="MNEMO_CONTEXT_ASSEMBLER__HISTORY_LIMIT for the run"
    )
    parser.add_argument("--concurrency", type=int, default=8, help="questions in flight at once")
    parser.add_argument(
        "--retrieved-limit", type=int, default=40, help="MNEMO_CONTEXT_ASSEMBLER__RETRIEVED_LIMIT (at least 20)"
    )
    parser.add_argument("--limit-questions", type=int, default=None, help="only the first N questions of each chat")
    parser.add_argument("--dump", type=Path, default=None, help="write every question's result here (JSON lines)")
    args = parser.parse_args()
    print_result(
        asyncio.run(
            main(
                args.data,
                args.limit_chats,
                args.history_limit,
                args.concurrency,
                args.retrieved_limit,
                args.limit_questions,
                args.dump,
            )
        )
    )

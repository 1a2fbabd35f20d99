"""Knowledge extracted by an LLM when one is configured; the patterns of ``facts.py`` otherwise.

One call per run of messages with the same characters present (``facts.runs_of_presence``), with the
versioned prompt ``prompts/extract_knowledge.v<N>.md`` of this package (v2 asks for facts at a high level:
what a character would still know a week later, not a retelling of the scene). The model is told who is
present, but only the caller knows who really was: ``candidates_from_updates`` drops every update naming a
character that was not present for the whole run (or is unknown), so a wrong or manipulated answer cannot teach
an absent character anything. ``high_level_facts`` then holds the answer to what the prompt asked: list markers
and whitespace tidied, a quoted line of the transcript (dialogue, not a fact about it) and a paragraph dropped,
repeats folded. Each fact records the model (``llm:<model>``) and the prompt version.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from mnemo.services.memory_extractor.schemas import KnowledgeUpdates
from mnemo.shared.aggregates.knowledge import FactCandidate, normalise, present_characters
from mnemo.shared.events.recorded import MessageRecorded
from mnemo.shared.llm.port import ChatModel, Completion, JsonAsk, ProgressCallback
from mnemo.shared.llm.prompts import PromptLibrary

PROMPTS = PromptLibrary("mnemo.services.memory_extractor")
PROMPT = "extract_knowledge"
LLM_CONFIDENCE = 0.8
MAX_FACTS_PER_CHARACTER = 20  # per call: a runaway answer does not flood a character's knowledge
# A fact is one to three sentences; longer is a retelling of the scene, the opposite of what the prompt asks.
MAX_FACT_CHARS = 400
_LIST_MARKER = re.compile(r"\A(?:[-*\u2022]|\d{1,2}[.)])\s+")
_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019", "\u00ab": "\u00bb", "\u300c": "\u300d"}


def transcript(messages: Sequence[MessageRecorded]) -> str:
    return "\n".join(f"{(m.author_name.strip() or m.role)}: {m.content.strip()}" for m in messages if m.content.strip())


def _unquoted(text: str) -> tuple[str, bool]:
    """``text`` without the quotation marks wrapping it whole, and whether it had them."""
    if len(text) > 2 and _QUOTES.get(text[0]) == text[-1]:
        return text[1:-1].strip(), True
    return text, False


def high_level_facts(answers: Iterable[str], run: Sequence[MessageRecorded]) -> list[str]:
    """The model's facts for one character, kept to what the prompt asks for, in the model's order.

    Tidied: a list marker (``- ``, ``1. ``), runs of whitespace and quotation marks around the whole fact.
    Dropped: a fact in quotation marks whose words are (part of) a line of the transcript (a quote is dialogue,
    not what was learned from it; the same words unquoted are kept, since a narrator's line can be a fact as it
    stands), a fact over ``MAX_FACT_CHARS``, and a repeat
    of an earlier one (same words, whatever the case and punctuation). At most ``MAX_FACTS_PER_CHARACTER``.
    """
    lines = {normalise(m.content) for m in run}
    kept: dict[str, str] = {}
    for answer in answers:
        text = " ".join(_LIST_MARKER.sub("", answer.strip()).split())
        unquoted, quoted = _unquoted(text)
        key = normalise(unquoted)
        if not key or len(text) > MAX_FACT_CHARS or key in kept or (quoted and any(key in ln for ln in lines)):
            continue
        kept[key] = unquoted
        if len(kept) == MAX_FACTS_PER_CHARACTER:
            break
    return list(kept.values())


def character_names(messages: Sequence[MessageRecorded]) -> dict[str, str]:
    """Each present character's display name: what it signs its messages with, else its id."""
    names = {c: c for m in messages for c in present_characters(m)}
    for m in messages:
        if m.author_id in names and m.author_name.strip():
            names[m.author_id] = m.author_name.strip()
    return names


def extraction_ask(messages: Sequence[MessageRecorded]) -> JsonAsk[KnowledgeUpdates]:
    """What to ask the model of ``messages``, tagged ``extract_knowledge.v2``."""
    names = character_names(messages)
    return PROMPTS.load(PROMPT).ask(
        KnowledgeUpdates,
        characters="\n".join(f"- {cid}: {name}" for cid, name in names.items()),
        transcript=transcript(messages),
    )


def candidates_from_updates(
    run: Sequence[MessageRecorded], completion: Completion[KnowledgeUpdates], *, revision: str = ""
) -> list[FactCandidate]:
    """The model's facts for the characters present for EVERY message of ``run``; others are dropped."""
    if not run:
        return []
    present = present_characters(run[0])
    for msg in run[1:]:
        present = {c: k for c, k in present.items() if c in present_characters(msg)}
    last = run[-1]
    answers: dict[str, list[str]] = {}  # a character named twice in one answer is one list of facts
    for update in completion.value.updates:
        if update.character_id in present:  # else not present (or invented): the check only the caller can make
            answers.setdefault(update.character_id, []).extend(update.learned_facts)
    out: list[FactCandidate] = []
    for character_id, facts in answers.items():
        kind = present[character_id]
        for text in high_level_facts(facts, run):
            out.append(
                FactCandidate(
                    character_id=character_id,
                    character_kind=kind,
                    user_id=last.user_id,
                    conversation_id=last.conversation_id,
                    text=text,
                    fact_type="semantic",
                    confidence=LLM_CONFIDENCE,
                    learned_at=last.created_at,
                    message_ids=tuple(m.message_id for m in run),
                    method=completion.method,
                    prompt_version=completion.prompt_version,
                    revision=revision,
                )
            )
    return out


async def extract(
    chat_model: ChatModel, run: Sequence[MessageRecorded], on_progress: ProgressCallback | None = None
) -> Completion[KnowledgeUpdates]:
    """Raises ``LLMError`` when the model is unavailable or keeps answering off-schema."""
    return await chat_model.complete_json(extraction_ask(run), on_progress=on_progress)


CONSOLIDATE_PROMPT = "consolidate_facts"


class ConsolidatedFact(BaseModel):
    """One broader statement holding every piece of information of the facts it folds."""  # sent to the model

    model_config = ConfigDict(frozen=True, extra="ignore", str_strip_whitespace=True)

    fact: str = Field(min_length=1, description="one to three sentences, standalone")


async def consolidate(
    chat_model: ChatModel, texts: Sequence[str], on_progress: ProgressCallback | None = None
) -> Completion[ConsolidatedFact]:
    """Fold ``texts`` (oldest first) into one fact. Raises ``LLMError`` (the caller merges extractively)."""
    ask = PROMPTS.load(CONSOLIDATE_PROMPT).ask(ConsolidatedFact, facts="\n".join(f"- {t}" for t in texts))
    return await chat_model.complete_json(ask, on_progress=on_progress)

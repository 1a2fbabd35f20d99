"""Knowledge extracted by an LLM when one is configured; the patterns of ``facts.py`` otherwise.

One call per run of messages with the same characters present (``facts.runs_of_presence``), with the
versioned prompt ``mnemo/shared/llm/prompts/extract_knowledge.v<N>.md``. The model is told who is present, but
only the caller knows who really was: ``candidates_from_updates`` drops every update naming a character that
was not present for the whole run (or is unknown), so a wrong or manipulated answer cannot teach an absent
character anything. Each fact records the model (``llm:<model>``) and the prompt version.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from mnemo.services.memory_extractor.facts import FactCandidate, present_characters
from mnemo.services.memory_extractor.schemas import KnowledgeUpdates
from mnemo.shared.events.recorded import MessageRecorded
from mnemo.shared.llm.port import ChatModel, Completion, ProgressCallback, PromptMessage
from mnemo.shared.llm.prompts import PromptLibrary

PROMPTS = PromptLibrary("mnemo.services.memory_extractor")
PROMPT = "extract_knowledge"
LLM_CONFIDENCE = 0.8
MAX_FACTS_PER_CHARACTER = 20  # per call: a runaway answer does not flood a character's knowledge


def transcript(messages: Sequence[MessageRecorded]) -> str:
    return "\n".join(f"{(m.author_name.strip() or m.role)}: {m.content.strip()}" for m in messages if m.content.strip())


def character_names(messages: Sequence[MessageRecorded]) -> dict[str, str]:
    """Each present character's display name: what it signs its messages with, else its id."""
    names = {c: c for m in messages for c in present_characters(m)}
    for m in messages:
        if m.author_id in names and m.author_name.strip():
            names[m.author_id] = m.author_name.strip()
    return names


def prompt_messages(messages: Sequence[MessageRecorded]) -> tuple[list[PromptMessage], str]:
    """The chat messages to send and the prompt tag (``extract_knowledge.v1``) to record."""
    prompt = PROMPTS.load(PROMPT)
    names = character_names(messages)
    text = prompt.render(
        characters="\n".join(f"- {cid}: {name}" for cid, name in names.items()),
        transcript=transcript(messages),
    )
    return [PromptMessage.user(text)], prompt.tag


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
    out: list[FactCandidate] = []
    for update in completion.value.updates:
        kind = present.get(update.character_id)
        if kind is None:
            continue  # not present (or invented): the security check only the caller can make
        for text in list(dict.fromkeys(update.learned_facts))[:MAX_FACTS_PER_CHARACTER]:
            out.append(
                FactCandidate(
                    character_id=update.character_id,
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
    chat, tag = prompt_messages(run)
    return await chat_model.complete_json(chat, KnowledgeUpdates, prompt_version=tag, on_progress=on_progress)


CONSOLIDATE_PROMPT = "consolidate_facts"


class ConsolidatedFact(BaseModel):
    """One broader statement holding every piece of information of the facts it folds."""  # sent to the model

    model_config = ConfigDict(frozen=True, extra="ignore", str_strip_whitespace=True)

    fact: str = Field(min_length=1, description="one to three sentences, standalone")


async def consolidate(
    chat_model: ChatModel, texts: Sequence[str], on_progress: ProgressCallback | None = None
) -> Completion[ConsolidatedFact]:
    """Fold ``texts`` (oldest first) into one fact. Raises ``LLMError`` (the caller merges extractively)."""
    prompt = PROMPTS.load(CONSOLIDATE_PROMPT)
    text = prompt.render(facts="\n".join(f"- {t}" for t in texts))
    return await chat_model.complete_json(
        [PromptMessage.user(text)], ConsolidatedFact, prompt_version=prompt.tag, on_progress=on_progress
    )

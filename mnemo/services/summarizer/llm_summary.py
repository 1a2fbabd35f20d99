"""Summaries written by an LLM when one is configured (``MNEMO_LLM__BASE_URL``); extractive otherwise.

The prompts are the versioned files ``mnemo/shared/llm/prompts/summarize.v<N>.md`` (a span of messages, about 120
words), ``summarize_long.v<N>.md`` (a span closed by the token trigger, or a recomputed longer summary: about
``words`` words) and ``consolidate.v<N>.md`` (several summaries into one); each summary records the prompt version and the model
that answered, so summaries can be told apart and regenerated when either changes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Sequence
from typing import TypeVar

from mnemo.services.summarizer.domain import RangeMessage, SummaryRange, participants_of
from mnemo.services.summarizer.schemas import SummaryOutput
from mnemo.shared.aggregates.summaries import Span, span_summary
from mnemo.shared.events.recorded import SummaryCreated
from mnemo.shared.llm.port import ChatModel, Completion, JsonAsk, LLMError
from mnemo.shared.llm.prompts import PromptLibrary

PROMPTS = PromptLibrary("mnemo.services.summarizer")
PROMPT = "summarize"
LONG_PROMPT = "summarize_long"
CONSOLIDATE_PROMPT = "consolidate"

log = logging.getLogger(__name__)
_Answer = TypeVar("_Answer")


async def or_none(call: Awaitable[_Answer], what: str) -> _Answer | None:
    """The LLM's answer, or None when it fails: every LLM step of the summarizer then takes its extractive path,
    so a model outage slows nothing and loses no summary."""
    try:
        return await call
    except LLMError as exc:
        log.warning("LLM %s failed, falling back to extractive: %s", what, exc)
        return None


def transcript(messages: Sequence[RangeMessage]) -> str:
    return "\n".join(f"{(m.author_name.strip() or m.role)}: {m.content.strip()}" for m in messages if m.content.strip())


def summary_ask(messages: Sequence[RangeMessage], target_tokens: int | None = None) -> JsonAsk[SummaryOutput]:
    """What to ask the model of ``messages``, tagged ``summarize.v1``; with ``target_tokens``, the long prompt
    asking for about that many tokens (as words: three quarters of it)."""
    names = sorted({(m.author_name.strip() or m.role) for m in messages})
    values = {"participants": "\n".join(f"- {n}" for n in names), "transcript": transcript(messages)}
    if target_tokens is None:
        return PROMPTS.load(PROMPT).ask(SummaryOutput, **values)
    return PROMPTS.load(LONG_PROMPT).ask(SummaryOutput, **values, words=max(20, target_tokens * 3 // 4))


def summary_from_completion(
    *,
    summary_id: str,
    user_id: str,
    conversation_id: str,
    rng: SummaryRange,
    messages: Sequence[RangeMessage],
    completion: Completion[SummaryOutput],
    audience: Sequence[str],
) -> SummaryCreated:
    out = completion.value
    span = Span(user_id, conversation_id, rng.first_index, rng.last_index)
    return span_summary(
        summary_id, span, messages, participants_of(messages), audience, text=out.summary,
        importance=out.importance, emotional_context=out.emotional_context, method=completion.method,
        prompt_version=completion.prompt_version,
    )  # fmt: skip


async def summarize(
    chat_model: ChatModel, messages: Sequence[RangeMessage], target_tokens: int | None = None
) -> Completion[SummaryOutput]:
    """Raises ``LLMError`` when the model is unavailable or keeps answering off-schema."""
    return await chat_model.complete_json(summary_ask(messages, target_tokens))


def consolidation_ask(texts: Sequence[str]) -> JsonAsk[SummaryOutput]:
    """What to ask the model to merge ``texts`` (oldest first), tagged ``consolidate.v1``."""
    listed = "\n\n".join(f"[{n}] {t.strip()}" for n, t in enumerate(texts, start=1))
    return PROMPTS.load(CONSOLIDATE_PROMPT).ask(SummaryOutput, summaries=listed)


async def consolidate(chat_model: ChatModel, texts: Sequence[str]) -> Completion[SummaryOutput]:
    """Raises ``LLMError`` when the model is unavailable or keeps answering off-schema."""
    return await chat_model.complete_json(consolidation_ask(texts))

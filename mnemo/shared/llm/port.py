"""The chat-model port: messages in, one pydantic-validated JSON object out.

Services depend on this Protocol, never on a provider. A ``ChatModel`` either returns a value that passed
the schema's validation or raises an ``LLMError``; callers catch ``LLMError`` and use their no-LLM fallback
(or let the message be redelivered), so no half-valid model output reaches the event log.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)

Role = Literal["system", "user", "assistant"]
ProgressCallback = Callable[[], Awaitable[None]]


class LLMError(Exception):
    """Base of every chat-model failure; catch this to fall back."""


class LLMUnavailable(LLMError):
    """No usable answer could be obtained: network, timeouts, 429/5xx after retries, or a refused request."""


class LLMResponseInvalid(LLMError):
    """The model answered, but not with the requested object: not JSON, schema violation (after the
    correction retry), truncated output (``finish_reason`` ``length``), a refusal or a malformed envelope."""


@dataclass(frozen=True, slots=True)
class PromptMessage:
    role: Role
    content: str

    @classmethod
    def system(cls, content: str) -> PromptMessage:
        return cls("system", content)

    @classmethod
    def user(cls, content: str) -> PromptMessage:
        return cls("user", content)

    @classmethod
    def assistant(cls, content: str) -> PromptMessage:
        return cls("assistant", content)


@dataclass(frozen=True, slots=True)
class Completion(Generic[T]):
    """A validated answer and what produced it (recorded beside derived events for audit and re-runs).

    ``model`` is the model the provider says answered (it may be more specific than the configured name).
    Token counts are summed over every call made for this answer, ``None`` when the provider gave none.
    ``attempts`` counts model answers read: 2 after a schema-correction retry (HTTP retries not included).
    """

    value: T
    model: str
    prompt_version: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    attempts: int = 1

    @property
    def method(self) -> str:
        """The ``method`` string derived events use for LLM output, e.g. ``llm:gpt-4o-mini``."""
        return f"llm:{self.model}"


@dataclass(frozen=True, slots=True)
class JsonAsk(Generic[T]):
    """One question to a chat model: the messages, the schema its one JSON object must match, and the version
    of the prompt they were rendered from (``summarize.v1``, echoed into the ``Completion`` for provenance).
    ``Prompt.ask`` (``prompts.py``) builds it from a shipped prompt."""

    messages: Sequence[PromptMessage]
    schema: type[T]
    prompt_version: str


class ChatModel(Protocol):
    @property
    def model(self) -> str:
        """The configured model name."""
        ...

    async def complete_json(self, ask: JsonAsk[T], *, on_progress: ProgressCallback | None = None) -> Completion[T]:
        """Ask ``ask.messages`` for one JSON object matching ``ask.schema`` and return it validated.

        ``ask.prompt_version`` is echoed into the ``Completion`` for provenance. ``on_progress`` is awaited periodically while the call (including retries and waits) is in flight,
        so a JetStream consumer can send ``in_progress`` and keep its message; its failures are logged, not
        raised. Raises ``LLMUnavailable`` or ``LLMResponseInvalid``.
        """
        ...

    async def close(self) -> None: ...

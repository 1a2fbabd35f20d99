"""Chat completions from any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM, Ollama...).

Contract:
- ``POST {base_url}/chat/completions`` with the messages and ``response_format`` ``json_schema`` (strict) built
  from the pydantic schema; the reply's ``choices[0].message.content`` is validated with pydantic.
- HTTP: 429, 5xx, timeouts and connection errors are retried up to ``max_retries`` times honouring
  ``Retry-After`` seconds (``mnemo.shared.http_retry``), then ``LLMUnavailable``; other 4xx raise ``LLMUnavailable``
  at once. ``timeout_s`` applies to each HTTP operation, so a call's wall time is bounded by roughly
  ``(max_retries + 1) * timeout_s`` plus the waits.
- Content: a reply wrapped in one Markdown code fence (```json ... ```) is accepted, because servers without
  constrained decoding often add one and the JSON inside is still exactly what was asked for. Anything else
  that is not valid JSON or violates the schema is retried ``schema_retries`` times (default once) with the
  validation error appended as a user message, then ``LLMResponseInvalid``.
- ``finish_reason`` ``length`` (truncated), ``content_filter``, a refusal or a malformed envelope raise
  ``LLMResponseInvalid`` at once: asking again the same way would not fix them.
- ``on_progress`` is awaited every ``progress_interval_s`` while the call is in flight (``heartbeat``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import BaseModel, ValidationError

from mnemo.shared.http_retry import RequestRefused, RetriesExhausted, RetryPolicy, post_json_with_retries
from mnemo.shared.llm.json_schema import strict_json_schema
from mnemo.shared.llm.port import (
    Completion,
    JsonAsk,
    LLMResponseInvalid,
    LLMUnavailable,
    ProgressCallback,
    T,
)
from mnemo.shared.llm.progress import heartbeat
from mnemo.shared.metrics import LLM_CALLS, LLM_TOKENS
from mnemo.shared.usage import record_llm

_FENCED = re.compile(r"\A\s*```[A-Za-z0-9_-]*[ \t]*\n(?P<body>.*?)\n?[ \t]*```\s*\Z", re.DOTALL)
_MAX_ERRORS_SHOWN = 10


@dataclass(slots=True)
class _Answer:
    """One parsed ``/chat/completions`` answer."""

    content: str
    model: str | None
    prompt_tokens: int | None
    completion_tokens: int | None


class OpenAIChatModel:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        schema_retries: int = 1,
        progress_interval_s: float = 5.0,
        backoff_s: float = 0.5,
        max_retry_after_s: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if schema_retries < 0 or progress_interval_s <= 0 or timeout_s <= 0:
            raise ValueError("schema_retries must not be negative, progress_interval_s and timeout_s positive")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/", headers=headers, timeout=timeout_s, transport=transport
        )
        self._model = model
        self._policy = RetryPolicy(max_retries=max_retries, backoff_s=backoff_s, max_delay_s=max_retry_after_s)
        self._temperature = temperature
        self._max_tokens = max_tokens
        self._schema_retries = schema_retries
        self._progress_interval_s = progress_interval_s

    @property
    def model(self) -> str:
        return self._model

    async def complete_json(self, ask: JsonAsk[T], *, on_progress: ProgressCallback | None = None) -> Completion[T]:
        if not ask.messages:
            raise ValueError("at least one message is needed")
        async with heartbeat(on_progress, self._progress_interval_s):
            return await self._complete(ask)

    async def _complete(self, ask: JsonAsk[T]) -> Completion[T]:
        schema = ask.schema
        conversation = [{"role": m.role, "content": m.content} for m in ask.messages]
        body = self._body(schema)
        prompt_tokens: int | None = None
        completion_tokens: int | None = None
        for attempt in range(1, self._schema_retries + 2):
            answer = await self._ask(body | {"messages": conversation})
            prompt_tokens = _add(prompt_tokens, answer.prompt_tokens)
            completion_tokens = _add(completion_tokens, answer.completion_tokens)
            try:
                value = schema.model_validate_json(_unfence(answer.content))
            except ValidationError as exc:
                problems = _describe(exc)
                if attempt > self._schema_retries:
                    raise LLMResponseInvalid(
                        f"{schema.__name__} not satisfied after {attempt} answers ({problems}): "
                        f"{answer.content[:200]!r}"
                    ) from exc
                conversation.append({"role": "assistant", "content": answer.content})
                conversation.append({"role": "user", "content": _correction(problems)})
                continue
            return Completion(
                value=value,
                model=answer.model or self._model,
                prompt_version=ask.prompt_version,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                attempts=attempt,
            )
        raise AssertionError("unreachable: the loop returns or raises")

    def _body(self, schema: type[BaseModel]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._model,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": _schema_name(schema), "schema": strict_json_schema(schema), "strict": True},
            },
        }
        if self._temperature is not None:
            body["temperature"] = self._temperature
        if self._max_tokens is not None:
            body["max_tokens"] = self._max_tokens
        return body

    async def _ask(self, body: dict[str, Any]) -> _Answer:
        """One completion request; its outcome and the tokens the provider reports go to the metrics."""
        try:
            response = await post_json_with_retries(self._client, "chat/completions", body, self._policy)
            answer = _parse_envelope(response)
        except RequestRefused as exc:
            LLM_CALLS.labels(model=self._model, outcome="error").inc()
            raise LLMUnavailable(f"chat completion refused by {self._model!r} ({exc})") from exc
        except RetriesExhausted as exc:
            LLM_CALLS.labels(model=self._model, outcome="error").inc()
            raise LLMUnavailable(f"chat completion with {self._model!r} {exc}") from exc
        except Exception:
            LLM_CALLS.labels(model=self._model, outcome="error").inc()
            raise
        LLM_CALLS.labels(model=self._model, outcome="ok").inc()
        for kind, count in (("prompt", answer.prompt_tokens), ("completion", answer.completion_tokens)):
            if count:
                LLM_TOKENS.labels(model=self._model, type=kind).inc(count)
        record_llm(answer.prompt_tokens, answer.completion_tokens)  # the tenant's usage report
        return answer

    async def close(self) -> None:
        await self._client.aclose()


def _parse_envelope(response: httpx.Response) -> _Answer:
    try:
        data = response.json()
        choice = data["choices"][0]
        message = choice["message"]
        finish_reason = choice.get("finish_reason")
        content = message.get("content")
        refusal = message.get("refusal")
        usage = data.get("usage") or {}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise LLMResponseInvalid(
            f"malformed chat completion ({type(exc).__name__}: {exc}): {response.text[:200]!r}"
        ) from exc
    if refusal:
        raise LLMResponseInvalid(f"the model refused: {str(refusal)[:200]!r}")
    if finish_reason == "length":
        raise LLMResponseInvalid("the reply was truncated (finish_reason 'length'); raise max_tokens or shorten input")
    if finish_reason == "content_filter":
        raise LLMResponseInvalid("the reply was withheld by the provider's content filter")
    if not isinstance(content, str):
        raise LLMResponseInvalid(f"the reply has no text content (finish_reason {finish_reason!r})")
    model = data.get("model")
    return _Answer(
        content=content,
        model=model if isinstance(model, str) and model else None,
        prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
        completion_tokens=_int_or_none(usage.get("completion_tokens")),
    )


def _unfence(content: str) -> str:
    """The JSON inside a single enclosing Markdown code fence, else the content unchanged."""
    match = _FENCED.match(content)
    return match.group("body") if match else content


def _describe(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    parts = [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in errors[:_MAX_ERRORS_SHOWN]]
    if len(errors) > _MAX_ERRORS_SHOWN:
        parts.append(f"and {len(errors) - _MAX_ERRORS_SHOWN} more")
    return "; ".join(parts)


def _correction(problems: str) -> str:
    return (
        "Your previous reply was not a valid JSON object for the required schema. "
        f"Problems: {problems}. Reply again with only the corrected JSON object, no other text."
    )


def _schema_name(schema: type[BaseModel]) -> str:
    """OpenAI requires ``^[a-zA-Z0-9_-]{1,64}$``; generic models have brackets in ``__name__``."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64] or "output"


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _add(total: int | None, more: int | None) -> int | None:
    if more is None:
        return total
    return more if total is None else total + more

"""Embeddings over HTTP from any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, vLLM, Ollama, TEI...).

Contract:
- ``POST {base_url}/embeddings`` with ``{"model", "input": [texts]}`` in batches of ``batch_size``; vectors
  are returned in input order (the answer's items are placed by their ``index``, not their position) and
  L2-normalised here, because not every server normalises.
- ``dimensions`` is what the caller stores; every vector is checked against it. The ``dimensions`` request
  field is sent only with ``send_dimensions=True`` (OpenAI's text-embedding-3 models shorten their vectors
  with it; other servers reject the unknown field).
- 429, 5xx, timeouts and connection errors are retried up to ``max_retries`` times, waiting for the
  ``Retry-After`` seconds when the server gives them (capped at ``max_retry_after_s``), else exponential
  backoff. Then ``EmbedderUnavailable``. Other 4xx answers fail at once (a bad key or model does not heal).
- A malformed answer (not JSON, missing fields, wrong count or size) raises ``EmbedderResponseError``,
  a subclass of ``EmbedderUnavailable`` so callers that degrade on the port's error still do.
- Empty strings are sent as a single space: OpenAI rejects empty inputs, and every text must get a vector.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import httpx

from mnemo.shared.embedders.port import EmbedderUnavailable
from mnemo.shared.http_retry import RequestRefused, RetriesExhausted, RetryPolicy, post_json_with_retries
from mnemo.shared.metrics import EMBEDDING_PROVIDER_CALLS, EMBEDDING_PROVIDER_TOKENS


class EmbedderResponseError(EmbedderUnavailable):
    """The provider answered, but not with usable embeddings."""


class OpenAIEmbedder:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        dimensions: int,
        batch_size: int = 64,
        timeout_s: float = 30.0,
        max_retries: int = 3,
        *,
        send_dimensions: bool = False,
        backoff_s: float = 0.5,
        max_retry_after_s: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if batch_size < 1 or dimensions < 1 or max_retries < 0:
            raise ValueError("batch_size and dimensions must be positive, max_retries not negative")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/", headers=headers, timeout=timeout_s, transport=transport
        )
        self._model = model
        self._dimensions = dimensions
        self._batch_size = batch_size
        self._send_dimensions = send_dimensions
        self._policy = RetryPolicy(max_retries, backoff_s, max_retry_after_s)
        self._calls_ok = EMBEDDING_PROVIDER_CALLS.labels(provider=self.provider, outcome="ok")
        self._calls_failed = EMBEDDING_PROVIDER_CALLS.labels(provider=self.provider, outcome="error")
        self._tokens = EMBEDDING_PROVIDER_TOKENS.labels(provider=self.provider)

    @property
    def dimensions(self) -> int:
        return self._dimensions

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            vectors.extend(await self._embed_batch(list(texts[start : start + self._batch_size])))
        return vectors

    #: The provider's path under ``base_url`` and the prefix of ``model_id``; other API shapes override these
    #: and :meth:`_body` / :meth:`_items` (``mnemo/shared/embedders/native.py``).
    path = "embeddings"
    provider = "openai"

    @property
    def model_id(self) -> str:
        return f"{self.provider}:{self._model}:{self._dimensions}"

    def _body(self, texts: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self._model, "input": texts}
        if self._send_dimensions:
            body["dimensions"] = self._dimensions
        return body

    def _reported_tokens(self, answer: Any, response: httpx.Response) -> int | None:
        """The input tokens the provider says it read (OpenAI's ``usage``), for the metrics."""
        usage = answer.get("usage") if isinstance(answer, dict) else None
        return (
            reported_count(usage.get("prompt_tokens", usage.get("total_tokens"))) if isinstance(usage, dict) else None
        )

    def _items(self, answer: Any, expected: int) -> list[Any]:
        """The vectors of an OpenAI answer, in input order (placed by their ``index``)."""
        items = sorted(((int(d["index"]), d["embedding"]) for d in answer["data"]), key=lambda pair: pair[0])
        if [i for i, _ in items] != list(range(expected)):
            raise EmbedderResponseError(f"expected indexes 0..{expected - 1}, got {[i for i, _ in items]}")
        return [vector for _, vector in items]

    async def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        try:
            response = await post_json_with_retries(
                self._client, self.path, self._body([t or " " for t in texts]), self._policy
            )
        except RequestRefused as exc:
            self._calls_failed.inc()
            raise EmbedderUnavailable(f"embeddings request refused ({exc})") from exc
        except RetriesExhausted as exc:
            self._calls_failed.inc()
            raise EmbedderUnavailable(f"embeddings {exc}") from exc
        try:
            vectors = self._parse(response, len(texts))
        except EmbedderUnavailable:
            self._calls_failed.inc()
            raise
        self._calls_ok.inc()
        return vectors

    def _parse(self, response: httpx.Response, expected: int) -> list[list[float]]:
        try:
            answer = response.json()
            vectors = self._items(answer, expected)
            if (tokens := self._reported_tokens(answer, response)) is not None:
                self._tokens.inc(tokens)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EmbedderResponseError(
                f"malformed embeddings response ({type(exc).__name__}: {exc}): {response.text[:200]!r}"
            ) from exc
        if len(vectors) != expected:
            raise EmbedderResponseError(f"expected {expected} vectors, got {len(vectors)}")
        return [self._normalise(vector) for vector in vectors]

    def _normalise(self, vector: Any) -> list[float]:
        if not isinstance(vector, list) or len(vector) != self._dimensions:
            size = len(vector) if isinstance(vector, list) else type(vector).__name__
            raise EmbedderResponseError(
                f"model {self._model!r} returned a vector of size {size}, configured dimensions {self._dimensions}"
            )
        try:
            values = [float(x) for x in vector]
        except (TypeError, ValueError) as exc:
            raise EmbedderResponseError(f"non-numeric embedding value: {exc}") from exc
        norm = math.sqrt(sum(x * x for x in values))
        if not math.isfinite(norm) or norm == 0.0:
            raise EmbedderResponseError("zero or non-finite embedding vector")
        return [x / norm for x in values]

    async def close(self) -> None:
        await self._client.aclose()


def reported_count(value: Any) -> int | None:
    """A token count as reported (a non-negative integer, perhaps as text), else None."""
    try:
        count = int(value)
    except (TypeError, ValueError):
        return None
    return count if count >= 0 else None

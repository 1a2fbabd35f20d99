"""Embeddings from the native APIs of text-embeddings-inference (TEI) and Ollama, e.g. for BGE-M3.

Both also serve an OpenAI-compatible route (``provider=openai`` works with them); these speak their own
APIs because those are the ones every version has, and they let the server truncate an over-long input
instead of rejecting it. Retries, batching, the size check and L2 normalisation are
:class:`~shared.embedders.openai.OpenAIEmbedder`'s; only the request and the answer differ:

- TEI: ``POST {base_url}/embed`` with ``{"inputs": [texts], "truncate": true, "normalize": true}``, answered
  by a JSON array of vectors in input order. TEI serves one model, so ``model`` only names it in ``model_id``.
- Ollama: ``POST {base_url}/api/embed`` with ``{"model", "input": [texts], "truncate": true}``, answered by
  ``{"embeddings": [vectors]}`` in input order (``base_url`` is the server, e.g. ``http://host:11434``).
"""

from __future__ import annotations

from typing import Any

import httpx

from mnemo.shared.embedders.openai import OpenAIEmbedder, reported_count


class TEIEmbedder(OpenAIEmbedder):
    path = "embed"
    provider = "tei"

    def _body(self, texts: list[str]) -> dict[str, Any]:
        return {"inputs": texts, "truncate": True, "normalize": True}

    def _reported_tokens(self, answer: Any, response: httpx.Response) -> int | None:
        return reported_count(response.headers.get("x-compute-tokens"))  # TEI's count: its body holds vectors only

    def _items(self, answer: Any, expected: int) -> list[Any]:
        if not isinstance(answer, list):
            raise TypeError(f"expected a JSON array, got {type(answer).__name__}")
        return answer


class OllamaEmbedder(OpenAIEmbedder):
    path = "api/embed"
    provider = "ollama"

    def _body(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self._model, "input": texts, "truncate": True}

    def _reported_tokens(self, answer: Any, response: httpx.Response) -> int | None:
        return reported_count(answer.get("prompt_eval_count")) if isinstance(answer, dict) else None

    def _items(self, answer: Any, expected: int) -> list[Any]:
        vectors = answer["embeddings"]
        if not isinstance(vectors, list):
            raise TypeError(f"expected a list of embeddings, got {type(vectors).__name__}")
        return vectors

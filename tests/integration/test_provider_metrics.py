"""Calls and tokens of the HTTP providers, read from their real replies (a real HTTP server speaking their APIs):
OpenAI's ``usage``, TEI's ``x-compute-tokens`` header, Ollama's ``prompt_eval_count``; failures count as errors.
The embedder wrapper counts texts and the model's time."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mnemo.services.summarizer.schemas import SummaryOutput
from mnemo.shared.embedders.metered import MeteredEmbedder
from mnemo.shared.embedders.native import OllamaEmbedder, TEIEmbedder
from mnemo.shared.embedders.openai import EmbedderUnavailable, OpenAIEmbedder
from mnemo.shared.llm.openai import OpenAIChatModel
from mnemo.shared.llm.port import JsonAsk, LLMUnavailable, PromptMessage
from mnemo.shared.metrics import REGISTRY
from tests.fakes.openai_server import CHAT_PATH, FakeOpenAIServer, RecordedRequest, Reply, chat_handler, fake_vector

pytestmark = pytest.mark.integration
DIM = 8


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def _vectors(request: RecordedRequest) -> list[list[float]]:
    body = request.json
    return [fake_vector(t, DIM) for t in body.get("inputs") or body.get("input")]


async def test_openai_embeddings_count_calls_tokens_texts_and_time(server: FakeOpenAIServer) -> None:
    def answer(request: RecordedRequest) -> Reply:
        data = [{"index": i, "embedding": v} for i, v in enumerate(_vectors(request))]
        return Reply(200, {"data": data, "usage": {"prompt_tokens": 11, "total_tokens": 11}})

    server.route("POST", "/v1/embeddings", answer)
    calls = value("mnemo_embedding_provider_calls_total", provider="openai", outcome="ok")
    tokens = value("mnemo_embedding_provider_tokens_total", provider="openai")
    texts = value("mnemo_embedding_texts_total", provider="metrics-test")
    timed = value("mnemo_embedding_model_duration_seconds_count", provider="metrics-test")
    embedder = MeteredEmbedder(OpenAIEmbedder(server.base_url, None, "m", DIM, batch_size=3), "metrics-test")
    try:
        await embedder.embed([f"text {i}" for i in range(7)])
    finally:
        await embedder.close()
    assert value("mnemo_embedding_provider_calls_total", provider="openai", outcome="ok") - calls == 3
    assert value("mnemo_embedding_provider_tokens_total", provider="openai") - tokens == 33
    assert value("mnemo_embedding_texts_total", provider="metrics-test") - texts == 7
    assert value("mnemo_embedding_model_duration_seconds_count", provider="metrics-test") - timed == 1


async def test_a_refused_embedding_request_counts_as_an_error(server: FakeOpenAIServer) -> None:
    server.route("POST", "/v1/embeddings", lambda _r: Reply(401, {"error": {"message": "bad key"}}))
    errors = value("mnemo_embedding_provider_calls_total", provider="openai", outcome="error")
    embedder = OpenAIEmbedder(server.base_url, None, "m", DIM, max_retries=0)
    try:
        with pytest.raises(EmbedderUnavailable):
            await embedder.embed(["x"])
    finally:
        await embedder.close()
    assert value("mnemo_embedding_provider_calls_total", provider="openai", outcome="error") - errors == 1


async def test_tei_tokens_come_from_its_header_and_ollama_from_its_body(server: FakeOpenAIServer) -> None:
    server.route("POST", "/embed", lambda r: Reply(200, _vectors(r), headers={"x-compute-tokens": "17"}))
    server.route("POST", "/api/embed", lambda r: Reply(200, {"embeddings": _vectors(r), "prompt_eval_count": 23}))
    root = server.base_url.removesuffix("/v1")
    tei_before = value("mnemo_embedding_provider_tokens_total", provider="tei")
    ollama_before = value("mnemo_embedding_provider_tokens_total", provider="ollama")
    for embedder in (TEIEmbedder(root, None, "bge-m3", DIM), OllamaEmbedder(root, None, "bge-m3", DIM)):
        try:
            await embedder.embed(["a", "b"])
        finally:
            await embedder.close()
    assert value("mnemo_embedding_provider_tokens_total", provider="tei") - tei_before == 17
    assert value("mnemo_embedding_provider_tokens_total", provider="ollama") - ollama_before == 23


async def test_llm_calls_and_tokens_by_type(server: FakeOpenAIServer) -> None:
    good = {"summary": "Mira's brother smuggles.", "importance": 5, "emotional_context": "worried"}
    server.route("POST", CHAT_PATH, chat_handler(lambda _r: good))
    llm = OpenAIChatModel(server.base_url, None, "metrics-model", timeout_s=2.0, max_retries=0, backoff_s=0.01)
    try:
        await llm.complete_json(JsonAsk([PromptMessage.user("Mira: my brother smuggles.")], SummaryOutput, "t"))
        server.route("POST", CHAT_PATH, lambda _r: Reply(503))
        with pytest.raises(LLMUnavailable):
            await llm.complete_json(JsonAsk([PromptMessage.user("again")], SummaryOutput, "t"))
    finally:
        await llm.close()
    assert value("mnemo_llm_calls_total", model="metrics-model", outcome="ok") == 1
    assert value("mnemo_llm_calls_total", model="metrics-model", outcome="error") == 1
    assert value("mnemo_llm_tokens_total", model="metrics-model", type="prompt") == 10
    assert value("mnemo_llm_tokens_total", model="metrics-model", type="completion") == 5

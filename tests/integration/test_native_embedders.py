"""TEIEmbedder and OllamaEmbedder against a real HTTP server on 127.0.0.1 speaking each provider's API shape
(text-embeddings-inference ``POST /embed``, Ollama ``POST /api/embed``), plus the factory that picks them."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from mnemo.shared.embedders.factory import build_embedder
from mnemo.shared.embedders.native import OllamaEmbedder, TEIEmbedder
from mnemo.shared.embedders.openai import EmbedderResponseError
from mnemo.shared.embedders.port import EmbedderUnavailable
from mnemo.shared.settings import EmbedderSettings, Settings
from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest, Reply, fake_vector

DIM = 8


def tei_handler(request: RecordedRequest) -> Reply:
    """TEI's ``/embed``: a JSON array of vectors in input order (normalised when asked)."""
    body = request.json
    vectors = [fake_vector(t, DIM) for t in body["inputs"]]
    if body.get("normalize"):
        vectors = [normalised(v) for v in vectors]
    return Reply(200, vectors)


def ollama_handler(request: RecordedRequest) -> Reply:
    """Ollama's ``/api/embed``: ``{"model", "embeddings": [...]}`` in input order (not normalised here)."""
    body = request.json
    if body.get("model") != "bge-m3":
        return Reply(404, {"error": f"model {body.get('model')!r} not found, try pulling it first"})
    return Reply(200, {"model": body["model"], "embeddings": [fake_vector(t, DIM) for t in body["input"]]})


def normalised(v: list[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        srv.route("POST", "/embed", tei_handler)
        srv.route("POST", "/api/embed", ollama_handler)
        yield srv


def base(server: FakeOpenAIServer) -> str:
    return server.base_url.removesuffix("/v1")


async def test_tei_embeds_in_batches_in_order(server: FakeOpenAIServer) -> None:
    emb = TEIEmbedder(base(server), None, "BAAI/bge-m3", DIM, batch_size=3, timeout_s=2.0)
    texts = ["玄天宗", "東京タワー", "서울", "hello", ""]
    try:
        vectors = await emb.embed(texts)
    finally:
        await emb.close()
    for text, vec in zip(texts, vectors, strict=True):
        assert vec == pytest.approx(normalised(fake_vector(text or " ", DIM)))
    calls = server.calls("/embed")
    assert [len(c.json["inputs"]) for c in calls] == [3, 2]
    assert calls[0].json["truncate"] is True
    assert emb.model_id == "tei:BAAI/bge-m3:8"


async def test_ollama_embeds_and_normalises(server: FakeOpenAIServer) -> None:
    emb = OllamaEmbedder(base(server), "k", "bge-m3", DIM, batch_size=2, timeout_s=2.0)
    try:
        vectors = await emb.embed(["一", "二", "三"])
    finally:
        await emb.close()
    assert vectors[2] == pytest.approx(normalised(fake_vector("三", DIM)))
    calls = server.calls("/api/embed")
    assert [c.json["input"] for c in calls] == [["一", "二"], ["三"]]
    assert calls[0].headers["Authorization"] == "Bearer k"
    assert emb.model_id == "ollama:bge-m3:8"


async def test_ollama_unknown_model_fails_at_once(server: FakeOpenAIServer) -> None:
    emb = OllamaEmbedder(base(server), None, "nomic-embed-text", DIM, max_retries=3, backoff_s=0.01)
    with pytest.raises(EmbedderUnavailable, match="404"):
        await emb.embed(["a"])
    await emb.close()
    assert len(server.calls("/api/embed")) == 1  # a 4xx is not retried


async def test_wrong_size_and_malformed_answers_are_errors(server: FakeOpenAIServer) -> None:
    server.script("POST", "/embed", Reply(200, [[1.0, 2.0]]), Reply(200, {"vectors": []}), Reply(200, [[1.0] * DIM]))
    emb = TEIEmbedder(base(server), None, "m", DIM, max_retries=0)
    with pytest.raises(EmbedderResponseError, match="size 2"):
        await emb.embed(["a"])
    with pytest.raises(EmbedderResponseError, match="malformed"):
        await emb.embed(["a"])
    with pytest.raises(EmbedderResponseError, match="expected 2 vectors"):
        await emb.embed(["a", "b"])
    await emb.close()


async def test_tei_retries_a_503(server: FakeOpenAIServer) -> None:
    server.script("POST", "/embed", Reply(503, {"error": "loading"}))
    emb = TEIEmbedder(base(server), None, "m", DIM, max_retries=2, backoff_s=0.01)
    assert len(await emb.embed(["a"])) == 1
    await emb.close()
    assert len(server.calls("/embed")) == 2


def test_factory_builds_each_provider() -> None:
    def settings(**kw: object) -> Settings:
        return Settings(embedder=EmbedderSettings(**kw))  # type: ignore[arg-type]

    url = "http://127.0.0.1:9"
    assert isinstance(build_embedder(settings(provider="tei", base_url=url, dimensions=1024)).inner, TEIEmbedder)
    assert isinstance(build_embedder(settings(provider="ollama", base_url=url, model="bge-m3")).inner, OllamaEmbedder)
    with pytest.raises(ValueError, match="BASE_URL"):
        build_embedder(settings(provider="ollama"))
    multi = build_embedder(settings(provider="bundled-multilingual"))
    assert (multi.dimensions, multi.model_id) == (512, "use-multilingual-v3-512")
    with pytest.raises(ValueError, match="512-d"):
        build_embedder(settings(provider="bundled-multilingual", dimensions=384))

"""OpenAIEmbedder against a real HTTP server on 127.0.0.1 that speaks the OpenAI embeddings protocol."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import pytest

from mnemo.shared.embedders.openai import EmbedderResponseError, OpenAIEmbedder
from mnemo.shared.embedders.port import EmbedderUnavailable
from tests.fakes.openai_server import FakeOpenAIServer, Reply, embeddings_handler, fake_vector

DIM = 8
PATH = "/v1/embeddings"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        srv.route("POST", PATH, embeddings_handler(DIM))
        yield srv


def make(server: FakeOpenAIServer, **kw: object) -> OpenAIEmbedder:
    args: dict[str, object] = {"api_key": "sk-test", "model": "m", "dimensions": DIM, "batch_size": 3, "timeout_s": 2.0}
    args.update({"max_retries": 2, "backoff_s": 0.01} | kw)
    return OpenAIEmbedder(server.base_url, **args)  # type: ignore[arg-type]


def normalised(v: list[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


async def test_batches_restore_order_by_index_and_normalise(server: FakeOpenAIServer) -> None:
    texts = [f"text {i}" for i in range(7)] + [""]
    emb = make(server)
    try:
        vectors = await emb.embed(texts)
    finally:
        await emb.close()
    assert len(vectors) == 8
    for text, vec in zip(texts, vectors, strict=True):
        assert vec == pytest.approx(normalised(fake_vector(text or " ", DIM)))
    calls = server.calls(PATH)
    assert [len(c.json["input"]) for c in calls] == [3, 3, 2]
    assert calls[0].headers["Authorization"] == "Bearer sk-test"
    assert calls[0].json["model"] == "m"
    assert "dimensions" not in calls[0].json
    assert await make(server).embed([]) == []


async def test_send_dimensions_when_asked(server: FakeOpenAIServer) -> None:
    emb = make(server, send_dimensions=True)
    await emb.embed(["a"])
    await emb.close()
    assert server.calls(PATH)[0].json["dimensions"] == DIM


async def test_429_waits_for_retry_after_then_succeeds(server: FakeOpenAIServer) -> None:
    server.script("POST", PATH, Reply(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "1"}))
    emb = make(server)
    started = time.perf_counter()
    [vec] = await emb.embed(["x"])
    elapsed = time.perf_counter() - started
    await emb.close()
    assert vec == pytest.approx(normalised(fake_vector("x", DIM)))
    assert elapsed >= 0.95  # the backoff alone would be 0.01 s
    assert len(server.calls(PATH)) == 2


async def test_500_then_success(server: FakeOpenAIServer) -> None:
    server.script("POST", PATH, Reply(500, {"error": "boom"}), Reply(503, {"error": "busy"}))
    emb = make(server)
    assert len(await emb.embed(["x"])) == 1
    await emb.close()
    assert len(server.calls(PATH)) == 3


async def test_persistent_500_raises_unavailable_after_bounded_retries(server: FakeOpenAIServer) -> None:
    server.script("POST", PATH, *[Reply(500, {"error": "down"})] * 10)
    emb = make(server, max_retries=2)
    with pytest.raises(EmbedderUnavailable, match=r"after 3 attempts.*HTTP 500"):
        await emb.embed(["x"])
    await emb.close()
    assert len(server.calls(PATH)) == 3


async def test_client_error_is_not_retried(server: FakeOpenAIServer) -> None:
    server.script("POST", PATH, Reply(401, {"error": {"message": "bad key"}}))
    emb = make(server)
    with pytest.raises(EmbedderUnavailable, match=r"HTTP 401.*bad key"):
        await emb.embed(["x"])
    await emb.close()
    assert len(server.calls(PATH)) == 1


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Reply(200, body=b"{not json"), "malformed embeddings response"),
        (Reply(200, {"object": "list"}), "malformed embeddings response.*KeyError"),
        (Reply(200, {"data": [{"index": 0, "embedding": [1.0, 2.0]}]}), "size 2, configured dimensions 8"),
        (Reply(200, {"data": []}), "expected indexes 0..0"),
        (Reply(200, {"data": [{"index": 0, "embedding": [0.0] * DIM}]}), "zero or non-finite"),
    ],
)
async def test_bad_answers_raise_clear_errors(server: FakeOpenAIServer, reply: Reply, message: str) -> None:
    server.script("POST", PATH, reply)
    emb = make(server)
    with pytest.raises(EmbedderResponseError, match=message):
        await emb.embed(["x"])
    await emb.close()
    assert len(server.calls(PATH)) == 1  # a malformed answer is not retried


async def test_timeout_is_retried_then_unavailable(server: FakeOpenAIServer) -> None:
    server.script("POST", PATH, *[Reply(200, {"data": []}, delay_s=1.0)] * 2)
    emb = make(server, timeout_s=0.2, max_retries=1)
    with pytest.raises(EmbedderUnavailable, match="Timeout"):
        await emb.embed(["x"])
    await emb.close()
    assert len(server.calls(PATH)) == 2


async def test_timeout_then_success(server: FakeOpenAIServer) -> None:
    server.script("POST", PATH, Reply(200, {"data": []}, delay_s=1.0))
    emb = make(server, timeout_s=0.3)
    assert len(await emb.embed(["x", "y"])) == 2
    await emb.close()


async def test_connection_refused_is_unavailable() -> None:
    emb = OpenAIEmbedder("http://127.0.0.1:9/v1", None, "m", DIM, max_retries=1, backoff_s=0.01)
    with pytest.raises(EmbedderUnavailable, match="ConnectError"):
        await emb.embed(["x"])
    await emb.close()


async def test_factory_builds_both_providers(server: FakeOpenAIServer) -> None:
    from mnemo.shared.embedders.bundled import BundledEmbedder
    from mnemo.shared.embedders.factory import build_embedder
    from mnemo.shared.settings import EmbedderSettings, Settings

    assert isinstance(build_embedder(Settings()).inner, BundledEmbedder)
    with pytest.raises(ValueError, match="384"):
        build_embedder(Settings(embedder=EmbedderSettings(dimensions=512)))
    with pytest.raises(ValueError, match="BASE_URL"):
        build_embedder(Settings(embedder=EmbedderSettings(provider="openai")))
    cfg = EmbedderSettings(provider="openai", base_url=server.base_url, dimensions=DIM, batch_size=2)
    emb = build_embedder(Settings(embedder=cfg))
    assert isinstance(emb.inner, OpenAIEmbedder)
    assert len(await emb.embed(["a", "b", "c"])) == 3
    await emb.close()
    assert [len(c.json["input"]) for c in server.calls(PATH)] == [2, 1]

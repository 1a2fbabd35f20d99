"""OpenAIChatModel against a real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions protocol."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator

import pytest

from mnemo.services.memory_extractor.schemas import KnowledgeUpdates
from mnemo.services.summarizer.schemas import SummaryOutput
from mnemo.shared.llm.openai import OpenAIChatModel
from mnemo.shared.llm.port import (
    Completion,
    JsonAsk,
    LLMResponseInvalid,
    LLMUnavailable,
    ProgressCallback,
    PromptMessage,
)
from tests.fakes.openai_server import CHAT_PATH, FakeOpenAIServer, RecordedRequest, Reply, chat_handler, chat_reply

pytestmark = pytest.mark.integration

GOOD = {"summary": "Mira told Aldo about her brother.", "importance": 6, "emotional_context": "tense, then warm"}
MESSAGES = [PromptMessage.system("You summarise."), PromptMessage.user("Mira: my brother smuggles.")]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        srv.route("POST", CHAT_PATH, chat_handler(lambda _req: GOOD))
        yield srv


@pytest.fixture
async def llm(server: FakeOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    model = OpenAIChatModel(server.base_url, "sk-test", "m", timeout_s=2.0, max_retries=2, backoff_s=0.01)
    yield model
    await model.close()


async def summarise(llm: OpenAIChatModel, on_progress: ProgressCallback | None = None) -> Completion[SummaryOutput]:
    return await llm.complete_json(JsonAsk(MESSAGES, SummaryOutput, "summarize.v1"), on_progress=on_progress)


async def test_success_sends_strict_schema_and_returns_validated_value(
    server: FakeOpenAIServer, llm: OpenAIChatModel
) -> None:
    completion = await summarise(llm)
    assert completion.value == SummaryOutput(**GOOD)
    assert (completion.model, completion.method, completion.prompt_version) == (
        "fake-chat",
        "llm:fake-chat",
        "summarize.v1",
    )
    assert (completion.prompt_tokens, completion.completion_tokens, completion.attempts) == (10, 5, 1)
    [call] = server.calls(CHAT_PATH)
    assert call.headers["Authorization"] == "Bearer sk-test"
    body = call.json
    assert body["model"] == "m"
    assert body["messages"] == [
        {"role": "system", "content": "You summarise."},
        {"role": "user", "content": MESSAGES[1].content},
    ]
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "SummaryOutput"
    assert fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["additionalProperties"] is False
    assert sorted(schema["required"]) == ["emotional_context", "importance", "summary"]
    assert schema["properties"]["importance"]["maximum"] == 10


async def test_nested_schema_is_strict_everywhere(server: FakeOpenAIServer, llm: OpenAIChatModel) -> None:
    updates = {"updates": [{"character_id": "bot-1", "learned_facts": ["Mira's brother smuggles.", "  "]}]}
    server.script("POST", CHAT_PATH, chat_reply(json.dumps(updates)))
    completion = await llm.complete_json(JsonAsk(MESSAGES, KnowledgeUpdates, "extract_knowledge.v1"))
    assert completion.value.updates[0].learned_facts == ["Mira's brother smuggles."]
    schema = server.calls(CHAT_PATH)[0].json["response_format"]["json_schema"]["schema"]
    inner = schema["$defs"]["CharacterKnowledge"]
    assert inner["additionalProperties"] is False
    assert sorted(inner["required"]) == ["character_id", "learned_facts"]


@pytest.mark.parametrize(
    "content",
    [
        f"```json\n{json.dumps(GOOD)}\n```",
        f"  ```\n{json.dumps(GOOD, indent=2)}\n```\n",
    ],
)
async def test_markdown_fenced_json_is_accepted(server: FakeOpenAIServer, llm: OpenAIChatModel, content: str) -> None:
    """Decision: servers without constrained decoding often fence their JSON; the JSON inside is accepted."""
    server.script("POST", CHAT_PATH, chat_reply(content))
    completion = await summarise(llm)
    assert completion.value == SummaryOutput(**GOOD)
    assert len(server.calls(CHAT_PATH)) == 1


async def test_prose_around_a_fence_is_a_schema_violation(server: FakeOpenAIServer, llm: OpenAIChatModel) -> None:
    server.script("POST", CHAT_PATH, chat_reply(f"Here you go:\n```json\n{json.dumps(GOOD)}\n```"))
    completion = await summarise(llm)
    assert completion.attempts == 2  # corrected by the retry (the route answers well)


async def test_schema_violation_is_corrected_on_retry(server: FakeOpenAIServer, llm: OpenAIChatModel) -> None:
    bad = json.dumps(GOOD | {"importance": 11})
    server.script("POST", CHAT_PATH, chat_reply(bad))
    completion = await summarise(llm)
    assert completion.value.importance == 6
    assert completion.attempts == 2
    assert (completion.prompt_tokens, completion.completion_tokens) == (20, 10)  # summed over both answers
    first, second = server.calls(CHAT_PATH)
    assert len(first.json["messages"]) == 2
    retry_messages = second.json["messages"]
    assert retry_messages[:2] == first.json["messages"]
    assert retry_messages[2] == {"role": "assistant", "content": bad}
    assert retry_messages[3]["role"] == "user"
    assert "importance" in retry_messages[3]["content"]
    assert "less than or equal to 10" in retry_messages[3]["content"]


async def test_persistent_schema_violation_raises(server: FakeOpenAIServer, llm: OpenAIChatModel) -> None:
    server.route("POST", CHAT_PATH, chat_handler(lambda _req: {"summary": "", "importance": 3}))
    with pytest.raises(LLMResponseInvalid, match="SummaryOutput not satisfied after 2 answers"):
        await summarise(llm)
    assert len(server.calls(CHAT_PATH)) == 2


async def test_truncated_by_length_raises_without_retry(server: FakeOpenAIServer, llm: OpenAIChatModel) -> None:
    server.script("POST", CHAT_PATH, chat_reply('{"summary": "Mira told Al', finish_reason="length"))
    with pytest.raises(LLMResponseInvalid, match="truncated"):
        await summarise(llm)
    assert len(server.calls(CHAT_PATH)) == 1


async def test_cut_json_is_retried_then_raises(server: FakeOpenAIServer, llm: OpenAIChatModel) -> None:
    """Cut JSON without finish_reason "length" is invalid JSON: one correction retry, then the error."""
    server.route("POST", CHAT_PATH, chat_handler(lambda _req: '{"summary": "Mira told Al'))
    with pytest.raises(LLMResponseInvalid, match="Invalid JSON"):
        await summarise(llm)
    assert len(server.calls(CHAT_PATH)) == 2


@pytest.mark.parametrize(
    "reply",
    [
        chat_reply(None, refusal="I can't help with that."),
        chat_reply(None, finish_reason="content_filter"),
        Reply(200, {"object": "chat.completion", "choices": []}),
        Reply(200, body=b"<html>proxy error</html>"),
    ],
    ids=["refusal", "content_filter", "no_choices", "not_json"],
)
async def test_unusable_envelopes_raise_invalid_at_once(
    server: FakeOpenAIServer, llm: OpenAIChatModel, reply: Reply
) -> None:
    server.script("POST", CHAT_PATH, reply)
    with pytest.raises(LLMResponseInvalid):
        await summarise(llm)
    assert len(server.calls(CHAT_PATH)) == 1


async def test_429_waits_for_retry_after_then_succeeds(server: FakeOpenAIServer, llm: OpenAIChatModel) -> None:
    server.script("POST", CHAT_PATH, Reply(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "1"}))
    completion = await summarise(llm)
    assert completion.value.importance == 6
    first, second = server.calls(CHAT_PATH)
    assert second.at - first.at >= 0.9  # the waited Retry-After, not the 0.01 s backoff


async def test_5xx_then_success(server: FakeOpenAIServer, llm: OpenAIChatModel) -> None:
    server.script("POST", CHAT_PATH, Reply(500, {"error": "boom"}), Reply(503, {"error": "busy"}))
    completion = await summarise(llm)
    assert completion.value == SummaryOutput(**GOOD)
    assert completion.attempts == 1  # HTTP retries are not model answers
    assert len(server.calls(CHAT_PATH)) == 3


async def test_persistent_5xx_raises_unavailable(server: FakeOpenAIServer, llm: OpenAIChatModel) -> None:
    server.route("POST", CHAT_PATH, lambda _req: Reply(502, {"error": "bad gateway"}))
    with pytest.raises(LLMUnavailable, match="3 attempts"):
        await summarise(llm)
    assert len(server.calls(CHAT_PATH)) == 3  # 1 + max_retries


async def test_4xx_is_refused_at_once(server: FakeOpenAIServer, llm: OpenAIChatModel) -> None:
    server.script("POST", CHAT_PATH, Reply(400, {"error": {"message": "response_format json_schema unsupported"}}))
    with pytest.raises(LLMUnavailable, match="refused"):
        await summarise(llm)
    assert len(server.calls(CHAT_PATH)) == 1


async def test_timeout_is_retried_then_unavailable(server: FakeOpenAIServer) -> None:
    slow = chat_reply(json.dumps(GOOD), delay_s=1.0)
    server.script("POST", CHAT_PATH, slow, slow)
    llm = OpenAIChatModel(server.base_url, None, "m", timeout_s=0.3, max_retries=1, backoff_s=0.01)
    try:
        with pytest.raises(LLMUnavailable, match="Timeout"):
            await summarise(llm)
    finally:
        await llm.close()
    calls = server.calls(CHAT_PATH)
    assert len(calls) == 2
    assert "Authorization" not in calls[0].headers


async def test_timeout_then_success(server: FakeOpenAIServer) -> None:
    server.script("POST", CHAT_PATH, chat_reply(json.dumps(GOOD), delay_s=1.0))
    llm = OpenAIChatModel(server.base_url, None, "m", timeout_s=0.3, max_retries=1, backoff_s=0.01)
    try:
        completion = await summarise(llm)  # the first call times out, the route answers the retry
    finally:
        await llm.close()
    assert completion.value == SummaryOutput(**GOOD)
    assert len(server.calls(CHAT_PATH)) == 2


async def test_on_progress_is_awaited_during_a_slow_reply(server: FakeOpenAIServer) -> None:
    server.script("POST", CHAT_PATH, chat_reply(json.dumps(GOOD), delay_s=0.6))
    beats: list[float] = []

    async def on_progress() -> None:
        beats.append(asyncio.get_running_loop().time())
        if len(beats) == 2:
            raise RuntimeError("NATS hiccup")  # logged, does not abort the call

    llm = OpenAIChatModel(server.base_url, None, "m", timeout_s=5.0, progress_interval_s=0.1)
    try:
        completion = await summarise(llm, on_progress=on_progress)
        count = len(beats)
        await asyncio.sleep(0.3)
    finally:
        await llm.close()
    assert completion.value == SummaryOutput(**GOOD)
    assert count >= 3
    assert len(beats) == count  # the heartbeat stopped with the call


async def test_request_echoes_options(server: FakeOpenAIServer) -> None:
    seen: list[RecordedRequest] = []

    def respond(req: RecordedRequest) -> dict[str, object]:
        seen.append(req)
        return GOOD

    server.route("POST", CHAT_PATH, chat_handler(respond))
    llm = OpenAIChatModel(server.base_url + "/", None, "m", temperature=0.2, max_tokens=300)
    try:
        await summarise(llm)
    finally:
        await llm.close()
    assert seen[0].json["temperature"] == 0.2
    assert seen[0].json["max_tokens"] == 300

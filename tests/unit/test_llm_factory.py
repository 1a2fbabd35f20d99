"""build_chat_model: no base URL means no model (callers fall back); otherwise an OpenAI-compatible client."""

from __future__ import annotations

from pydantic import SecretStr

from mnemo.shared.llm.factory import build_chat_model
from mnemo.shared.llm.openai import OpenAIChatModel
from mnemo.shared.settings import LLMSettings, Settings


def test_without_base_url_there_is_no_model() -> None:
    assert build_chat_model(Settings(llm=LLMSettings())) is None
    assert build_chat_model(LLMSettings(base_url="")) is None


async def test_with_base_url_an_openai_client_is_built() -> None:
    cfg = LLMSettings(base_url="http://127.0.0.1:9/v1", api_key=SecretStr("k"), model="qwen", max_retries=1)
    model = build_chat_model(Settings(llm=cfg))
    assert isinstance(model, OpenAIChatModel)
    assert model.model == "qwen"
    await model.close()

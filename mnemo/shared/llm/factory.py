"""Choose the chat model for this process from settings (``llm.*``)."""

from __future__ import annotations

from mnemo.shared.llm.openai import OpenAIChatModel
from mnemo.shared.llm.port import ChatModel
from mnemo.shared.settings import LLMSettings, Settings


def build_chat_model(settings: Settings | LLMSettings) -> ChatModel | None:
    """An OpenAI-compatible client, or ``None`` without ``MNEMO_LLM__BASE_URL``: callers then use their
    no-LLM fallback (extractive summaries, no knowledge extraction). The caller owns and closes the model."""
    cfg = settings.llm if isinstance(settings, Settings) else settings
    if not cfg.base_url:
        return None
    return OpenAIChatModel(
        base_url=cfg.base_url,
        api_key=cfg.api_key.get_secret_value() if cfg.api_key else None,
        model=cfg.model,
        timeout_s=cfg.timeout_s,
        max_retries=cfg.max_retries,
    )

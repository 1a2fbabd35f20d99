"""Choose the embedder for this process from settings (``embedder.provider``)."""

from __future__ import annotations

from shared.embedders.bundled import DIMENSIONS, BundledEmbedder
from shared.embedders.openai import OpenAIEmbedder
from shared.embedders.port import Embedder
from shared.settings import Settings


def build_embedder(settings: Settings) -> Embedder:
    """``bundled``: the in-process MiniLM (384-d, the configured dimensions must agree); ``openai``: HTTP."""
    cfg = settings.embedder
    if cfg.provider == "bundled":
        if cfg.dimensions != DIMENSIONS:
            raise ValueError(f"the bundled model makes {DIMENSIONS}-d vectors, settings say {cfg.dimensions}")
        return BundledEmbedder(batch_size=cfg.batch_size, spin=cfg.spin_threads)
    if not cfg.base_url:
        raise ValueError("embedder provider 'openai' needs MNEMO_EMBEDDER__BASE_URL")
    return OpenAIEmbedder(
        base_url=cfg.base_url,
        api_key=cfg.api_key.get_secret_value() if cfg.api_key else None,
        model=cfg.model,
        dimensions=cfg.dimensions,
        batch_size=cfg.batch_size,
        timeout_s=cfg.timeout_s,
    )

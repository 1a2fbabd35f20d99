"""Choose the embedder for this process from settings (``embedder.provider``)."""

from __future__ import annotations

from mnemo.shared.embedders import multilingual
from mnemo.shared.embedders.bundled import DIMENSIONS, BundledEmbedder
from mnemo.shared.embedders.metered import MeteredEmbedder
from mnemo.shared.embedders.multilingual import MultilingualEmbedder
from mnemo.shared.embedders.native import OllamaEmbedder, TEIEmbedder
from mnemo.shared.embedders.openai import OpenAIEmbedder
from mnemo.shared.embedders.port import Embedder
from mnemo.shared.settings import Settings

HTTP_PROVIDERS = {"openai": OpenAIEmbedder, "tei": TEIEmbedder, "ollama": OllamaEmbedder}


def build_embedder(settings: Settings) -> MeteredEmbedder:
    """``bundled``: the in-process MiniLM (384-d); ``bundled-multilingual``: the in-process USE (512-d) (the
    configured dimensions must agree); ``openai``, ``tei``, ``ollama``: HTTP (``mnemo/shared/embedders/native.py``).
    Counted by a ``MeteredEmbedder`` (its ``inner`` is the provider's own)."""
    return MeteredEmbedder(_provider_embedder(settings), settings.embedder.provider)


def _provider_embedder(settings: Settings) -> Embedder:
    cfg = settings.embedder
    if cfg.provider == "bundled":
        if cfg.dimensions != DIMENSIONS:
            raise ValueError(f"the bundled model makes {DIMENSIONS}-d vectors, settings say {cfg.dimensions}")
        return BundledEmbedder(batch_size=cfg.batch_size, spin=cfg.spin_threads)
    if cfg.provider == "bundled-multilingual":
        if cfg.dimensions != multilingual.DIMENSIONS:
            raise ValueError(
                f"the bundled multilingual model makes {multilingual.DIMENSIONS}-d vectors, "
                f"settings say {cfg.dimensions}"
            )
        return MultilingualEmbedder(batch_size=cfg.batch_size)
    if not cfg.base_url:
        raise ValueError(f"embedder provider {cfg.provider!r} needs MNEMO_EMBEDDER__BASE_URL")
    return HTTP_PROVIDERS[cfg.provider](
        base_url=cfg.base_url,
        api_key=cfg.api_key.get_secret_value() if cfg.api_key else None,
        model=cfg.model,
        dimensions=cfg.dimensions,
        batch_size=cfg.batch_size,
        timeout_s=cfg.timeout_s,
    )

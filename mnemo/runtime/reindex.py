"""`mnemo reindex --model ...`: re-embed every vector with another embedding model (or the current analyzer).

Every point records the model that embedded it (``model``) and the lexical analyzer's version
(``analyzer``, ``mnemo/shared/analyzer.py``). Reindex counts the points made otherwise; when there are none it says
so and stops (``--force`` rebuilds anyway), else it rebuilds the projections from the log as ``mnemo replay``
does (same progress lines), embedding with the new model. Run it with the stack stopped, as replay.

The model is named by ``--model``: a bundled one (``bundled``, ``bundled-multilingual`` or their model ids)
or, with ``--provider openai|tei|ollama`` (default: the configured one), the model the HTTP provider serves
(``--base-url``, ``--dimensions`` when it differs). Then start the services with the same embedder settings
(``MNEMO_EMBEDDER__PROVIDER``, ``_MODEL``, ``_DIMENSIONS``, ``_BASE_URL``): a service embedding with another
model would write vectors the queries cannot compare with.

A change of dimensions needs a fresh collection: the embedded Qdrant Edge shard (``vectors.mode=local``) is
deleted and created anew; in stream mode the followers wipe theirs at the reset marker and must be restarted
with the new dimensions; a Qdrant server's collection cannot change size, so name a new one
(``MNEMO_VECTOR_COLLECTION``).
"""

from __future__ import annotations

import asyncio
import shutil

from mnemo.runtime.replay import rebuild
from mnemo.runtime.stack import start_servers
from mnemo.shared.analyzer import ANALYZER_VERSION
from mnemo.shared.bootstrap import open_core
from mnemo.shared.embedders import bundled, multilingual
from mnemo.shared.embedders.factory import build_embedder
from mnemo.shared.settings import EmbedderSettings, Settings
from mnemo.shared.vectors import points
from mnemo.shared.vectors.stream import StreamPointWriter

BUNDLED = {
    "bundled": "bundled",
    bundled.MODEL_ID: "bundled",
    "bundled-multilingual": "bundled-multilingual",
    multilingual.MODEL_ID: "bundled-multilingual",
}


def target_embedder(
    current: EmbedderSettings,
    model: str,
    provider: str | None = None,
    dimensions: int | None = None,
    base_url: str | None = None,
) -> EmbedderSettings:
    """The embedder settings ``--model`` (and the other flags) name, from the current ones."""
    if model in BUNDLED and provider in (None, BUNDLED[model]):
        fields = {"provider": BUNDLED[model]}
        if dimensions is not None:
            fields["dimensions"] = str(dimensions)
        keep = current.model_dump(exclude={"provider", "dimensions", "model"})
        return EmbedderSettings.model_validate(keep | fields)
    chosen = provider or current.provider
    if chosen.startswith("bundled"):
        raise ValueError(f"{model!r} is no bundled model: name --provider openai, tei or ollama")
    update = {"provider": chosen, "model": model, "dimensions": dimensions or current.dimensions}
    if base_url:
        update["base_url"] = base_url
    return EmbedderSettings.model_validate(current.model_dump() | update)


async def stale_points(settings: Settings, model_id: str) -> tuple[int, int] | None:
    """(points not made by ``model_id`` with this analyzer, all points), or None when the index cannot count
    (stream mode: the writer has no shard)."""
    core = await open_core(settings, vectors="write")
    try:
        index = core.vectors
        if index is None or isinstance(index, StreamPointWriter):
            return None
        total = await index.count(points.all_kinds())
        current = await index.count(points.made_by(model_id, ANALYZER_VERSION))
        return total - current, total
    finally:
        await core.close()


async def reindex(settings: Settings, target: EmbedderSettings, *, embedded: bool, force: bool = False) -> int:
    """Returns the number of events replayed (0 when nothing needed it)."""
    new = settings.model_copy(update={"embedder": target})
    embedder = build_embedder(new)  # fails here, before anything is dropped, on a bad model or dimensions
    model_id = embedder.model_id
    await embedder.close()
    servers = await asyncio.to_thread(start_servers, settings) if embedded else []
    try:
        same_size = target.dimensions == settings.embedder.dimensions
        stale = await stale_points(settings, model_id) if same_size else None
        if stale is not None:
            print(
                f"{stale[0]:,} of {stale[1]:,} points were made otherwise than {model_id} + analyzer {ANALYZER_VERSION}"
            )
            if stale[0] == 0 and stale[1] > 0 and not force:
                print("nothing to reindex (--force rebuilds anyway)")
                return 0
        if not same_size and not settings.qdrant_url and settings.vectors.mode == "local":
            shard = settings.data_dir / "qdrant-edge" / settings.vector_collection
            print(f"dimensions {settings.embedder.dimensions} -> {target.dimensions}: deleting the shard {shard}")
            await asyncio.to_thread(shutil.rmtree, shard, True)
        print(f"re-embedding with {model_id} ...", flush=True)
        replayed = await rebuild(new)
        print(
            f"done: start the services with MNEMO_EMBEDDER__PROVIDER={target.provider}"
            + ("" if target.provider.startswith("bundled") else f" MNEMO_EMBEDDER__MODEL={target.model}")
            + f" MNEMO_EMBEDDER__DIMENSIONS={target.dimensions}",
            flush=True,
        )
        return replayed
    finally:
        for server in reversed(servers):
            await asyncio.to_thread(server.stop)

"""Choose the vector index for this process: a Qdrant server when configured, else in-process Qdrant Edge.

Call once per process and share the result: Qdrant Edge allows one open handle per shard directory.
"""

from __future__ import annotations

from qdrant_client import AsyncQdrantClient

from shared.settings import Settings
from shared.vectors.edge import EdgeVectorIndex
from shared.vectors.port import VectorIndex
from shared.vectors.qdrant_server import QdrantServerIndex


def build_vector_index(settings: Settings) -> VectorIndex:
    """``qdrant_url`` set → ``QdrantServerIndex``; unset → ``EdgeVectorIndex`` under ``data_dir/qdrant-edge``."""
    if settings.qdrant_url:
        api_key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        client = AsyncQdrantClient(url=settings.qdrant_url, api_key=api_key)
        return QdrantServerIndex(client, settings.vector_collection)
    return EdgeVectorIndex(settings.data_dir / "qdrant-edge", settings.vector_collection)

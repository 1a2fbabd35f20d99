"""``python -m services.embedding``: run the embedding service alone (distributed mode)."""

from services.embedding.app import create_router
from shared.bootstrap import run_service

run_service("embedding", create_router, vectors="write", embedder=True)

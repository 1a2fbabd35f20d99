"""``python -m services.summarizer``: run the summarizer alone (distributed mode)."""

from services.summarizer.app import create_router
from shared.bootstrap import run_service

run_service("summarizer", create_router, embedder=True)

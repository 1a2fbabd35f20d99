"""``python -m services.ingest``: run ingest alone (distributed mode)."""

from services.ingest.app import create_router
from shared.bootstrap import run_service

run_service("ingest", create_router)

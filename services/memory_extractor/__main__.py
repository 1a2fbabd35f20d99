"""``python -m services.memory_extractor``: run the memory-extractor alone (distributed mode)."""

from services.memory_extractor.app import create_router, ensure_own_indexes
from shared.bootstrap import run_service

run_service("memory-extractor", create_router, own_indexes=ensure_own_indexes)

"""``python -m services.memory``: run the memory service alone (distributed mode)."""

from services.memory.app import create_router
from shared.bootstrap import run_service

run_service("memory", create_router)

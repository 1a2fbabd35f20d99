"""``python -m services.lore``: run the lore service alone (distributed mode)."""

from services.lore.app import create_router
from shared.bootstrap import run_service

run_service("lore", create_router)

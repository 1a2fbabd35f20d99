"""``python -m services.lore``: run the lore service alone (distributed mode)."""

from services.lore.app import DEFINITION
from shared.bootstrap import run_service

run_service(DEFINITION)

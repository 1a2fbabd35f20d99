"""``python -m mnemo.services.lore``: run the lore service alone (distributed mode)."""

from mnemo.services.lore.app import DEFINITION
from mnemo.shared.bootstrap import run_service

run_service(DEFINITION)

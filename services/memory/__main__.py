"""``python -m services.memory``: run the memory service alone (distributed mode)."""

from services.memory.app import DEFINITION
from shared.bootstrap import run_service

run_service(DEFINITION)

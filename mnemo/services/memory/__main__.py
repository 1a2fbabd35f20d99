"""``python -m mnemo.services.memory``: run the memory service alone (distributed mode)."""

from mnemo.services.memory.app import DEFINITION
from mnemo.shared.bootstrap import run_service

run_service(DEFINITION)

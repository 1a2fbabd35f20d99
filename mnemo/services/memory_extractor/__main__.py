"""``python -m mnemo.services.memory_extractor``: run the memory-extractor alone (distributed mode)."""

from mnemo.services.memory_extractor.app import DEFINITION
from mnemo.shared.bootstrap import run_service

run_service(DEFINITION)

"""``python -m services.memory_extractor``: run the memory-extractor alone (distributed mode)."""

from services.memory_extractor.app import DEFINITION
from shared.bootstrap import run_service

run_service(DEFINITION)

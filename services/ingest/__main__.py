"""``python -m services.ingest``: run ingest alone (distributed mode)."""

from services.ingest.app import DEFINITION
from shared.bootstrap import run_service

run_service(DEFINITION)

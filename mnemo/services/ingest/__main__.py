"""``python -m mnemo.services.ingest``: run ingest alone (distributed mode)."""

from mnemo.services.ingest.app import DEFINITION
from mnemo.shared.bootstrap import run_service

run_service(DEFINITION)

"""``python -m mnemo.services.summarizer``: run the summarizer alone (distributed mode)."""

from mnemo.services.summarizer.app import DEFINITION
from mnemo.shared.bootstrap import run_service

run_service(DEFINITION)

"""``python -m services.summarizer``: run the summarizer alone (distributed mode)."""

from services.summarizer.app import DEFINITION
from shared.bootstrap import run_service

run_service(DEFINITION)

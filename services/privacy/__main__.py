"""``python -m services.privacy``: run the privacy service alone (distributed mode)."""

from services.privacy.app import DEFINITION
from shared.bootstrap import run_service

run_service(DEFINITION)

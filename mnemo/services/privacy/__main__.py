"""``python -m mnemo.services.privacy``: run the privacy service alone (distributed mode)."""

from mnemo.services.privacy.app import DEFINITION
from mnemo.shared.bootstrap import run_service

run_service(DEFINITION)

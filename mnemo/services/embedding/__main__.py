"""``python -m mnemo.services.embedding``: run the embedding service alone (distributed mode)."""

from mnemo.services.embedding.app import DEFINITION
from mnemo.shared.bootstrap import run_service

run_service(DEFINITION)

"""``python -m services.embedding``: run the embedding service alone (distributed mode)."""

from services.embedding.app import DEFINITION
from shared.bootstrap import run_service

run_service(DEFINITION)

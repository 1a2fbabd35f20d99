"""``python -m services.context_assembler``: run the context-assembler alone (distributed mode)."""

from services.context_assembler.app import create_router, ensure_own_indexes
from shared.bootstrap import run_service

run_service("context-assembler", create_router, vectors="read", embedder=True, own_indexes=ensure_own_indexes)

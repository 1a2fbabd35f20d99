"""``python -m services.context_assembler``: run the context-assembler alone (distributed mode)."""

from services.context_assembler.app import DEFINITION
from shared.bootstrap import run_service

run_service(DEFINITION)

"""``python -m mnemo.services.context_assembler``: run the context-assembler alone (distributed mode)."""

from mnemo.services.context_assembler.app import DEFINITION
from mnemo.shared.bootstrap import run_service

run_service(DEFINITION)

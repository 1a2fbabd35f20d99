"""The public contract in one table: every public subject with its payload model, reply model, error codes,
description and an example. Adding a subject is one ``Operation`` in its area's module (chat.py, lore.py,
memory.py; a new area is a new module and one line below).

Generated from it (``mnemo contract-doc``, ``make docs``; tests/unit/test_contract_registry.py fails when a
committed artifact differs): the AsyncAPI document (mnemo/runtime/contract_doc.py, contracts/asyncapi.json), the
JSON Schema bundle clients generate their types from (mnemo/runtime/contract_schema.py, contracts/mnemo.schema.json),
the Python client's models and operation table (clients/python/mnemo_client/wire/) and the contract table of docs/contract.md.
Examples are validated against their models by the same test, so the docs never show a payload mnemo refuses.
"""

from __future__ import annotations

from pydantic import BaseModel

from mnemo.shared.contract_registry import (
    chat,
    conversation,
    documents,
    knowledge,
    lore,
    memory,
    memory_api,
    ops,
    privacy,
)
from mnemo.shared.contract_registry.operation import Operation, nats_msg_id
from mnemo_client.wire.contract import ErrorReply
from mnemo_client.wire.errors import ERROR_CODES

#: Every public subject, in the order of the contract table. A new area: a module like ``lore`` and one line here.
OPERATIONS: tuple[Operation, ...] = (
    *chat.OPERATIONS,
    *lore.OPERATIONS,
    *documents.OPERATIONS,
    *memory.OPERATIONS,
    *conversation.OPERATIONS,
    *knowledge.OPERATIONS,
    *memory_api.OPERATIONS,
    *privacy.OPERATIONS,
    *ops.OPERATIONS,
)

__all__ = ["ERROR_CODES", "OPERATIONS", "Operation", "models", "nats_msg_id", "operation"]


def operation(name_or_subject: str) -> Operation:
    """The operation with that name or subject."""
    for op in OPERATIONS:
        if name_or_subject in (op.name, op.subject):
            return op
    raise KeyError(name_or_subject)


def models() -> list[type[BaseModel]]:
    """Every model of the contract, each once, in registry order, ``ErrorReply`` last."""
    seen: dict[type[BaseModel], None] = {}
    for op in OPERATIONS:
        seen.setdefault(op.payload)
        if op.reply is not None:
            seen.setdefault(op.reply)
    seen.setdefault(ErrorReply)
    return list(seen)

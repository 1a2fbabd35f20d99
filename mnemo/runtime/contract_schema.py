"""The JSON Schema bundle of the public contract (contracts/mnemo.schema.json), generated from the contract
registry (mnemo/shared/contract_registry.py): the file client libraries generate their types from.

Shape: a JSON Schema 2020-12 document whose ``$defs`` hold every payload, reply and error model (pydantic's
schemas, validation mode: a field with a default may be omitted when sending), plus ``x-mnemo-operations``,
one row per subject (name, subject, kind, payload, reply, errors, service, description, example and, for
events, ``msg_id``: the fields whose JSON values, after the name, joined by ``:``, make the ``Nats-Msg-Id``)
and ``x-mnemo-error-codes``. Generators that only read ``$defs`` ignore the ``x-`` keys.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic.json_schema import models_json_schema

from mnemo.shared.contract_registry import ERROR_CODES, OPERATIONS, models

SCHEMA_ID = "https://mnemo.invalid/contracts/mnemo.schema.json"  # an identifier, not a place to fetch it from
REF = "#/$defs/{model}"


def schema_bundle() -> dict[str, Any]:
    _, top = models_json_schema([(m, "validation") for m in models()], ref_template=REF)
    defs: dict[str, Any] = top["$defs"]

    def ref(model: type[Any] | None) -> dict[str, str] | None:
        return None if model is None else {"$ref": REF.format(model=model.__name__)}

    operations = [
        {
            "name": op.name,
            "subject": op.subject,
            "kind": op.kind,
            "service": op.service,
            "description": op.description,
            "payload": ref(op.payload),
            "reply": ref(op.reply),
            "errors": list(op.errors),
            "msg_id": list(op.msg_id),
            # Events: the keyed (v2) subject clients publish on, ``{field}`` filled in with ``subject_token``.
            "keyed_subject": op.keyed_subject or None,
            "example": op.example,
        }
        for op in OPERATIONS
    ]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "mnemo public wire contract v1",
        "description": "Every model of mnemo's public NATS contract; x-mnemo-operations maps subjects to them.",
        "$defs": dict(sorted(defs.items())),
        "x-mnemo-operations": operations,
        "x-mnemo-error-codes": ERROR_CODES,
    }


def schema_text() -> str:
    return json.dumps(schema_bundle(), indent=2, ensure_ascii=False) + "\n"

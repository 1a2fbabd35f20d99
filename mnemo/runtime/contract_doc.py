"""The public wire contract as a FastStream application, for its AsyncAPI document (`mnemo contract-doc`).

The running services consume JetStream in raw batches (see mnemo/shared/delivery.py), which FastStream cannot
describe; this app declares each subject of the contract registry (mnemo/shared/contract_registry.py) with its
pydantic models instead, so the document is generated from the same models the services validate with. It is
never run against a server.
"""

from __future__ import annotations

from typing import Any

from faststream import FastStream
from faststream.nats import NatsBroker
from faststream.specification import AsyncAPI

from mnemo.shared.contract_registry import ERROR_CODES, OPERATIONS, Operation


def _description(op: Operation, *, keyed: bool = False) -> str:
    if keyed:
        return (
            f"{op.description} The keyed form (v2) of {op.subject}, same payload: tenant_id and {op.key} in the "
            "subject, each escaped to one token (ASCII letters, digits, - and _ kept, every other UTF-8 byte as %XX), "
            f"so every event of one {op.key.removesuffix('_id')} reaches the same ingest partition. Publish to "
            f"JetStream (stream MNEMO_CHAT) with header Nats-Msg-Id; consumed by {op.service}."
        )
    if op.kind == "event":
        return f"{op.description} Publish to JetStream (stream MNEMO_CHAT) with header Nats-Msg-Id; consumed by {op.service}."
    codes = ", ".join(f"{code} ({ERROR_CODES[code]})" for code in op.errors)
    return f"{op.description} Request-reply ({op.service} service). Errors: ErrorReply {{error: {{code, message}}}} with {codes}."


def build_contract_app() -> FastStream:
    broker = NatsBroker(logger=None)
    for op in OPERATIONS:
        if op.kind == "event":
            broker.publisher(op.subject, schema=op.payload, description=_description(op), title=op.subject)
            keyed = op.keyed_subject
            broker.publisher(keyed, schema=op.payload, description=_description(op, keyed=True), title=keyed)
        else:
            broker.subscriber(op.subject, title=op.subject, description=_description(op))(_documented(op))
    return FastStream(
        broker,
        specification=AsyncAPI(
            title="mnemo",
            version="1.0.0",
            description="Long-term memory and lore for chat and roleplay platforms: public wire contract v1.",
        ),
    )


def _documented(op: Operation) -> Any:
    """A documentation-only handler typed with the subject's request and reply models."""

    async def handler(request: Any) -> Any:
        raise NotImplementedError(f"documentation only: the {op.service} service answers this subject")

    handler.__annotations__ = {"request": op.payload, "return": op.reply}
    handler.__name__ = handler.__qualname__ = op.name.replace(".", "_")
    return handler


def asyncapi_document() -> dict[str, Any]:
    doc: dict[str, Any] = build_contract_app().schema.to_specification().to_jsonable()
    return doc

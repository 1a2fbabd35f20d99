"""The operations the gateway serves: every public subject of the wire contract, as ``POST /v1/...``.

The path is the subject without ``mnemo.``, ``rpc.`` and the version, which becomes the path's prefix
(``mnemo.rpc.lore.book.create.v1`` -> ``/v1/lore/book/create``, ``mnemo.chat.message.created.v1`` ->
``/v1/chat/message/created``), so a NATS user finds each operation where the subject says. The request and
reply models are the wire contract's own (``mnemo/shared/contract_registry``), so the OpenAPI document and the
NATS services validate with the same models.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from mnemo.shared import contract_registry as registry

Kind = Literal["event", "rpc"]


@dataclass(frozen=True)
class GatewayRoute:
    subject: str
    kind: Kind
    request: type[BaseModel]
    reply: type[BaseModel] | None  # events answer with the gateway's own ``Accepted``
    summary: str

    @property
    def path(self) -> str:
        parts = self.subject.split(".")
        version, middle = parts[-1], [p for p in parts[1:-1] if p != "rpc"]
        return "/" + "/".join([version, *middle])

    @property
    def tag(self) -> str:
        return "chat events" if self.kind == "event" else self.subject.split(".")[2]

    @property
    def body_model(self) -> type[BaseModel]:
        """What the body is validated with: an RPC refuses unknown fields, as the service does
        (``mnemo.shared.rpc.strict``); an event ignores them, as ingest does."""
        return strict(self.request) if self.kind == "rpc" else self.request


@functools.cache
def strict(model: type[BaseModel]) -> type[BaseModel]:
    """``model`` with unknown fields refused, under the same name (so the OpenAPI schema is named as the model)."""
    config = ConfigDict(**{**model.model_config, "extra": "forbid"})
    namespace = {"model_config": config, "__module__": model.__module__, "__qualname__": model.__qualname__}
    subclass: type[BaseModel] = type(model.__name__, (model,), namespace)
    subclass.__doc__ = model.__doc__
    return subclass


# Derived from the contract registry, so a new subject is served as soon as it is registered; the operators'
# own (``audience="admin"``: the usage report across tenants) are not, since the gateway acts for tenants.
OPERATIONS: tuple[GatewayRoute, ...] = tuple(
    GatewayRoute(op.subject, "event" if op.kind == "event" else "rpc", op.payload, op.reply, op.description.rstrip("."))
    for op in registry.OPERATIONS
    if op.audience == "platform"
)

"""The operator views over HTTP: a tenant's dead letters and their redrive, consumer lag, the tenant's usage.

Only a key with the operator right (``<tenant> operator``, ``auth.py``) may call them; any other key gets 403.
An operator key still acts for one tenant: it sees and redrives the dead letters whose body names its tenant
(``tenant_id``, as every chat event and log event carries) and nothing else, and its usage row only. A dead
letter whose body names no tenant (not JSON, or no ``tenant_id``) is no tenant's: the deployment's operators
read it with ``mnemo dlq``. The lag per durable and the streams' sizes are the deployment's, counts only.
The gateway reads them as its NATS user: on a ``--secure`` deployment that takes the ``admin`` user (the
``platform`` user reads no dead letters and may not ask for usage: the views answer 503 and say so).

Nothing here is a second copy of the CLI's logic: the dead letters are read and redriven by
``mnemo.runtime.dlq`` (what ``mnemo dlq`` runs), the lag by ``mnemo.runtime.status.read_jetstream`` (what
``mnemo status`` runs), and the usage is the operators' ``mnemo.rpc.ops.usage.v1`` (``mnemo status --usage``)
asked for the key's tenant only.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated

from fastapi import Depends, FastAPI, Request
from nats.errors import Error as NatsError
from pydantic import BaseModel, Field

from mnemo.runtime import dlq, status
from mnemo.services.gateway import web
from mnemo.services.gateway.auth import KeyGrant
from mnemo.services.gateway.bridge import GatewayError, NatsBridge
from mnemo.shared import subjects
from mnemo_client.wire.ops_contract import MAX_GROWTH_DAYS, UsageReply, UsageRequest

BODY_PREVIEW = 2000  # characters of a dead letter's body shown: enough to recognise it, never a whole document
MAX_REDRIVE = 500


class DeadLetterView(BaseModel):
    seq: int = Field(..., description="its sequence in MNEMO_DLQ: what a redrive names")
    service: str = Field(..., description="the service that gave up on it")
    original_subject: str = Field(..., description="where it was published: a redrive publishes it there again")
    reason: str
    attempts: str = Field(..., description="deliveries before it was dead-lettered")
    time: str | None = Field(None, description="when it was dead-lettered (UTC, ISO 8601)")
    body: str = Field(..., description=f"the start of its body (up to {BODY_PREVIEW} characters)")


class DeadLettersReply(BaseModel):
    tenant_id: str
    dead_letters: list[DeadLetterView] = Field(..., description="the key's tenant's dead letters, oldest first")


class RedriveRequest(BaseModel):
    tenant_id: str
    seqs: list[int] = Field(..., min_length=1, max_length=MAX_REDRIVE, description="dead letters to redrive")


class RedriveOutcome(BaseModel):
    seq: int
    outcome: str = Field(..., description="`now <stream> #<seq>`, `duplicate of ...`, `skipped: ...` or `not_found`")


class RedriveReply(BaseModel):
    outcomes: list[RedriveOutcome]


class DurableLag(BaseModel):
    stream: str
    durable: str
    filter: str
    partition: str | None = Field(None, description="`<n>/<count>` for an ingest partition's durable")
    pending: int
    ack_pending: int
    lag: int = Field(..., description="pending + ack_pending: what KEDA's nats-jetstream scaler reads")
    redelivered: int


class StreamSize(BaseModel):
    name: str
    messages: int
    bytes: int


class LagReply(BaseModel):
    durables: list[DurableLag]
    streams: list[StreamSize]
    problems: list[str] = Field(default_factory=list, description="what could not be read")


class TenantOnly(BaseModel):
    tenant_id: str


class UsageAsked(TenantOnly):
    growth_days: int = Field(
        0, ge=0, le=MAX_GROWTH_DAYS, description="also each memory type's growth over this many UTC days up to today"
    )


async def operator_grant(grant: Annotated[KeyGrant, Depends(web.key_grant)]) -> KeyGrant:
    if not grant.operator:
        raise GatewayError(403, "forbidden", "this API key has no operator right (`<tenant> operator`)")
    return grant


Operator = Annotated[KeyGrant, Depends(operator_grant)]


def tenant_of(data: bytes) -> str | None:
    """The tenant a dead letter's body names, or None (not a JSON object, or no ``tenant_id``)."""
    try:
        body = json.loads(data)
    except ValueError:
        return None
    tenant = body.get("tenant_id") if isinstance(body, dict) else None
    return tenant if isinstance(tenant, str) and tenant else None


async def tenant_letters(bridge: NatsBridge, tenant: str) -> list[dlq.DeadLetter]:
    try:
        letters = await dlq.dead_letters(bridge.nc)
    except (NatsError, TimeoutError) as exc:  # e.g. the `platform` NATS user of a --secure deployment: no DLQ
        raise GatewayError(503, "unavailable", f"the dead letters cannot be read: {type(exc).__name__} {exc}") from exc
    return [letter for letter in letters if tenant_of(letter.data) == tenant]


def _view(letter: dlq.DeadLetter) -> DeadLetterView:
    return DeadLetterView(
        seq=letter.seq, service=letter.service, original_subject=letter.original_subject, reason=letter.reason,
        attempts=letter.attempts, time=letter.time.isoformat() if letter.time else None,
        body=letter.data[: BODY_PREVIEW * 4].decode("utf-8", "replace")[:BODY_PREVIEW],
    )  # fmt: skip


def add_operator_views(app: FastAPI) -> None:
    tags: list[str | Enum] = ["operators"]
    errors = web.error_responses(400, 401, 403, 422, 429, 503)  # 400: a body that is not JSON

    @app.post("/v1/operator/dead_letters/list", response_model=DeadLettersReply, responses=errors, tags=tags)
    async def list_dead_letters(request: Request, body: TenantOnly, grant: Operator) -> DeadLettersReply:
        """The key's tenant's dead letters with their reasons (operator right)."""
        web.check_tenant(body.tenant_id, grant.tenant)
        letters = await tenant_letters(request.app.state.bridge, grant.tenant)
        return DeadLettersReply(tenant_id=grant.tenant, dead_letters=[_view(x) for x in letters])

    @app.post("/v1/operator/dead_letters/redrive", response_model=RedriveReply, responses=errors, tags=tags)
    async def redrive(request: Request, body: RedriveRequest, grant: Operator) -> RedriveReply:
        """Publish the named dead letters of the key's tenant to their original subjects, then delete them;
        a sequence that is not one of this tenant's dead letters is `not_found` and left alone."""
        web.check_tenant(body.tenant_id, grant.tenant)
        bridge: NatsBridge = request.app.state.bridge
        own = {x.seq: x for x in await tenant_letters(bridge, grant.tenant)}
        done = {x.seq: outcome for x, outcome in await dlq.redrive(bridge.nc, [own[s] for s in body.seqs if s in own])}
        return RedriveReply(outcomes=[RedriveOutcome(seq=s, outcome=done.get(s, "not_found")) for s in body.seqs])

    @app.post("/v1/operator/lag", response_model=LagReply, responses=errors, tags=tags)
    async def lag(request: Request, body: TenantOnly, grant: Operator) -> LagReply:
        """Every durable consumer's lag and each stream's size, as `mnemo status` reads them (operator right)."""
        web.check_tenant(body.tenant_id, grant.tenant)
        report = status.Report(nats="gateway")
        try:
            await status.read_jetstream(request.app.state.bridge.nc, report)
        except Exception as exc:  # what cannot be read is said, as mnemo status does
            report.problems.append(f"JetStream: {type(exc).__name__}: {exc}")
        return LagReply(
            durables=[
                DurableLag(**vars(d), lag=d.lag) for d in sorted(report.durables, key=lambda d: (d.stream, d.durable))
            ],
            streams=[StreamSize(name=s.name, messages=s.messages, bytes=s.bytes) for s in report.streams],
            problems=report.problems,
        )

    @app.post("/v1/operator/usage", response_model=UsageReply, responses=errors, tags=tags)
    async def usage(request: Request, body: UsageAsked, grant: Operator) -> UsageReply:
        """The key's tenant's usage: messages and vectors held now, context and LLM tokens (`mnemo status
        --usage` for this tenant; operator right); with `growth_days`, each memory type held and added per day
        and the points per vector kind."""
        web.check_tenant(body.tenant_id, grant.tenant)
        asked = UsageRequest(tenant_ids=[grant.tenant], limit=1, growth_days=body.growth_days)
        bridge: NatsBridge = request.app.state.bridge
        reply = await bridge.request(subjects.OPS_USAGE, asked.model_dump_json().encode(), f"{grant.tenant}:usage")
        return UsageReply.model_validate(reply)

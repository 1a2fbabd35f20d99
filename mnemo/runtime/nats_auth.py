"""Least-privilege NATS users: the one table of who may publish and subscribe to what, and its server config.

Users: ``platform`` (publishes chat events, calls the RPCs, nothing of the log or the dead letters; it holds
the memory API's engine right), ``player`` (code acting for one player, such as ``mnemo mcp``: the context and
the memory API's own-namespace calls, not their ``engine`` twins: docs/memory-api.md), one per
service (its own consumers, RPC subjects and dead-letter subject, plus what every service's core does:
declare the streams and relay recorded events to ``mnemo.log.>``), ``stack`` (the embedded stack's shared
core and ``mnemo replay``) and ``admin`` (operators' tools: everything). Each user receives replies only on
its own inbox prefix ``_INBOX.<user>`` (``mnemo.shared.natsconn``). Responders answer through ``allow_responses``
(they may publish to a request's reply subject, nothing else). Everything is derived from
``mnemo.shared.subjects``; ``deploy/nats-auth.conf`` is rendered from this table (``mnemo nats-config``) and
``tests/unit/test_nats_auth.py`` checks it is up to date.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mnemo.services.context_assembler.gather.invalidations import SUBJECTS as INVALIDATING
from mnemo.shared import subjects
from mnemo.shared.lease import LEASE_BUCKET
from mnemo.shared.natsconn import inbox_prefix

JS_API = "$JS.API"
PLATFORM, PLAYER, HOST, ADMIN = "platform", "player", "stack", "admin"
#: The operators' requests (the usage report across tenants): the admin user's alone.
OPS_ALL = "mnemo.rpc.ops.>"
#: Streams every service's core declares at start (``mnemo.shared.streams.ensure_streams``).
CORE_STREAMS = (subjects.CHAT_STREAM, subjects.LOG_STREAM, subjects.DLQ_STREAM)


@dataclass(frozen=True)
class Role:
    """What one service does on NATS, as its ``app.py`` wires it."""

    consumes: str | None = None  # the stream its durable consumer reads
    answers: tuple[str, ...] = ()  # the RPC subjects it serves
    points: Literal["write", "read"] | None = None  # stream-mode vectors: the writer or a follower's shard
    lease: bool = False  # leases (mnemo/shared/lease.py): its keys in the lease bucket
    partitions: bool = False  # ingest: a durable per partition of ``consumes`` (mnemo/services/ingest/partitions.py)
    uploads: bool = False  # reads and deletes uploaded documents (MNEMO_UPLOADS)
    purges: tuple[str, ...] = ()  # streams it reads with ephemeral consumers and deletes messages from (erasure)
    hears: tuple[str, ...] = ()  # relayed log subjects it subscribes to on core NATS (no durable, no ack)
    publishes_chat: bool = False  # the memory service's chat import publishes chat events (keyed v2 subjects)
    reads_backlog_of: tuple[tuple[str, str], ...] = ()  # (stream, durable): reads that consumer's info, nothing else


_LORE_RPCS = (
    subjects.LORE_IMPORT,
    subjects.LORE_EXPORT,
    subjects.LORE_ATTACH,
    subjects.LORE_DETACH,
    subjects.LORE_BOOK_CREATE,
    subjects.LORE_BOOK_DELETE,
    subjects.LORE_BOOK_RENAME,
    subjects.LORE_ENTRY_CREATE,
    subjects.LORE_ENTRY_UPDATE,
    subjects.LORE_ENTRY_DELETE,
    subjects.LORE_LIST,
    subjects.LORE_DOCUMENT_IMPORT,
    subjects.LORE_DOCUMENT_GET,
    subjects.LORE_DOCUMENT_LIST,
    subjects.LORE_DOCUMENT_DELETE,
)

ROLES: dict[str, Role] = {
    "ingest": Role(consumes=subjects.CHAT_STREAM, lease=True, partitions=True),
    "embedding": Role(consumes=subjects.LOG_STREAM, points="write"),
    "summarizer": Role(consumes=subjects.LOG_STREAM),
    "memory-extractor": Role(
        consumes=subjects.LOG_STREAM,
        answers=(
            subjects.MEMORY_PROMOTE,
            subjects.MEMORY_UNPROMOTE,
            subjects.KNOWLEDGE_FACT_LIST,
            subjects.KNOWLEDGE_FACT_ADD,
            subjects.KNOWLEDGE_FACT_EDIT,
            subjects.KNOWLEDGE_FACT_RETRACT,
            subjects.KNOWLEDGE_FACT_HISTORY,
        ),
    ),
    # It hears the changes of what it keeps (mnemo/services/context_assembler/gather/invalidations.py).
    "context-assembler": Role(
        answers=(
            subjects.CONTEXT_ASSEMBLE,
            subjects.MEMORY_SEARCH,
            subjects.MEMORY_INDEX_STATUS,
            subjects.LORE_TEST_ACTIVATION,
            subjects.OPS_USAGE,
        ),
        points="read",
        hears=INVALIDATING,
        # memory.index_status's `pending`: the embedding durable's backlog (its info only: no pull, no ack).
        reads_backlog_of=((subjects.LOG_STREAM, subjects.durable("embedding")),),
    ),
    "lore": Role(answers=_LORE_RPCS, uploads=True),
    "memory": Role(
        answers=(
            subjects.MEMORY_CONVERT_TO_LORE,
            subjects.MEMORY_DELETE,
            subjects.MEMORY_EDIT,
            subjects.MEMORY_LIST,
            subjects.CONVERSATION_LIST,
            subjects.CONVERSATION_TIMELINE,
            *(s for s in subjects.MEMORY_PLAYER_CALLS if s != subjects.MEMORY_SEARCH),
            *subjects.MEMORY_ENGINE_CALLS,
            subjects.CHAT_IMPORT,
        ),
        publishes_chat=True,
    ),
    "privacy": Role(
        answers=(subjects.PRIVACY_ERASE_USER, subjects.PRIVACY_ERASE_TENANT, subjects.PRIVACY_EXPORT_USER),
        points="write",
        uploads=True,
        purges=CORE_STREAMS,
    ),
}


@dataclass(frozen=True)
class Grant:
    publish: tuple[str, ...]
    subscribe: tuple[str, ...]
    responds: bool = False  # allow_responses: may answer the requests it receives
    deny_publish: tuple[str, ...] = ()  # carved out of ``publish`` (a deny wins over an allow)


def _streams_api(*streams: str) -> list[str]:
    return [f"{JS_API}.STREAM.{verb}.{s}" for s in streams for verb in ("INFO", "CREATE", "UPDATE")]


def _durable_api(stream: str, durable: str) -> list[str]:
    """A durable pull consumer's JetStream API: its info, (re)creation in every form nats-py uses, its pulls
    and its acks (``$JS.ACK.<stream>.<durable>.…``)."""
    api = f"{JS_API}.CONSUMER"
    return [
        f"{api}.INFO.{stream}.{durable}",
        f"{api}.CREATE.{stream}.{durable}",
        f"{api}.CREATE.{stream}.{durable}.>",
        f"{api}.DURABLE.CREATE.{stream}.{durable}",
        f"{api}.MSG.NEXT.{stream}.{durable}",
        f"$JS.ACK.{stream}.{durable}.>",
        # The order gate asks whether a gap's sequences exist (mnemo/shared/consumers.py): the stream it reads anyway.
        f"{JS_API}.STREAM.MSG.GET.{stream}",
    ]


def _points_api(role: Literal["write", "read"]) -> list[str]:
    stream = subjects.POINTS_STREAM
    if role == "write":
        return [subjects.POINTS_ALL, *_streams_api(stream)]
    # A follower's ordered consumer: ephemeral, recreated on each gap, flow control answered on $JS.FC.
    return [
        *_streams_api(stream),
        f"{JS_API}.CONSUMER.CREATE.{stream}",
        f"{JS_API}.CONSUMER.CREATE.{stream}.>",
        f"{JS_API}.CONSUMER.DELETE.{stream}.>",
        f"$JS.FC.{stream}.>",
    ]


def _purge_api(stream: str) -> list[str]:
    """Erasure: scan ``stream`` with an ephemeral pull consumer and delete the erased user's messages."""
    api = f"{JS_API}.CONSUMER"
    return [
        f"{api}.CREATE.{stream}",
        f"{api}.CREATE.{stream}.>",
        f"{api}.MSG.NEXT.{stream}.>",
        f"{api}.DELETE.{stream}.>",
        f"{api}.INFO.{stream}.>",
        f"{JS_API}.STREAM.MSG.DELETE.{stream}",
        f"$JS.ACK.{stream}.>",
    ]


def _lease_api() -> list[str]:
    """The lease bucket (a key-value stream): declare it, read the key (direct or not), write it, and take a
    replica's member key out of it when it stops (a purge of that subject)."""
    stream = f"KV_{LEASE_BUCKET}"
    return [
        *_streams_api(stream),
        f"{JS_API}.STREAM.MSG.GET.{stream}",
        f"{JS_API}.DIRECT.GET.{stream}.>",
        f"{JS_API}.STREAM.PURGE.{stream}",
        f"$KV.{LEASE_BUCKET}.>",
    ]


def _partitions_api(stream: str) -> list[str]:
    """Ingest's partition durables (one per partition and generation, plus the v1 router's) on ``stream``: their
    names are made at run time, so any consumer of the chat stream (the only other is the privacy service's
    erasure scan), listed, created, read, acked and deleted (an older generation's, once drained); and the keyed
    subjects, where the v1 router republishes v1 events."""
    api = f"{JS_API}.CONSUMER"
    return [
        f"{api}.LIST.{stream}",
        f"{api}.INFO.{stream}.*",
        f"{api}.CREATE.{stream}.*",
        f"{api}.CREATE.{stream}.*.>",
        f"{api}.DURABLE.CREATE.{stream}.*",
        f"{api}.MSG.NEXT.{stream}.*",
        f"{api}.DELETE.{stream}.*",
        f"$JS.ACK.{stream}.*.>",
        f"{JS_API}.STREAM.MSG.GET.{stream}",
        subjects.CHAT_KEYED,
    ]


UPLOADS_STREAM = f"OBJ_{subjects.UPLOADS_BUCKET}"


def _uploads_api() -> list[str]:
    """The documents' Object Store bucket: put, get (an ordered consumer), read its metadata, delete."""
    return [
        f"$O.{subjects.UPLOADS_BUCKET}.>",
        f"{JS_API}.STREAM.MSG.GET.{UPLOADS_STREAM}",
        f"{JS_API}.DIRECT.GET.{UPLOADS_STREAM}.>",
        f"{JS_API}.CONSUMER.CREATE.{UPLOADS_STREAM}",
        f"{JS_API}.CONSUMER.CREATE.{UPLOADS_STREAM}.>",
        f"{JS_API}.CONSUMER.DELETE.{UPLOADS_STREAM}.>",
        f"{JS_API}.STREAM.PURGE.{UPLOADS_STREAM}",
        f"$JS.FC.{UPLOADS_STREAM}.>",
        # nats-py's object store finds the bucket's stream by subject to read an object: names only, no content.
        f"{JS_API}.STREAM.NAMES",
    ]


def _core(user: str) -> tuple[list[str], list[str]]:
    """What every process's core connection does: declare the streams and the uploads bucket, relay recorded
    events."""
    return [subjects.LOG_ALL, *_streams_api(*CORE_STREAMS, UPLOADS_STREAM)], [f"{inbox_prefix(user)}.>"]


def service_grant(name: str, role: Role) -> Grant:
    publish, subscribe = _core(name)
    if role.consumes is not None and role.partitions:
        publish += [subjects.dead_letter_subject(name), *_partitions_api(role.consumes)]
    elif role.consumes is not None:
        publish += [subjects.dead_letter_subject(name), *_durable_api(role.consumes, subjects.durable(name))]
    if role.points is not None:
        publish += _points_api(role.points)
    if role.lease:
        publish += _lease_api()
    if role.uploads:
        publish += [*_uploads_api(), subjects.LORE_DOCUMENT_STATUS]
    for stream in role.purges:
        publish += _purge_api(stream)
    if role.publishes_chat:
        publish.append(subjects.CHAT_KEYED)
    publish += [f"{JS_API}.CONSUMER.INFO.{stream}.{durable}" for stream, durable in role.reads_backlog_of]
    return Grant(tuple(dict.fromkeys(publish)), (*subscribe, *role.answers, *role.hears), responds=bool(role.answers))


def grants() -> dict[str, Grant]:
    """Every user's grant, in the order of the rendered configuration."""
    # The platform uploads documents into the bucket (object names are per tenant; NATS cannot check that).
    platform = ("mnemo.chat.>", "mnemo.rpc.>", f"{JS_API}.STREAM.INFO.{UPLOADS_STREAM}", *_uploads_api())
    # ... and every RPC but the operators' (the usage report across tenants).
    table = {
        PLATFORM: Grant(
            platform, (f"{inbox_prefix(PLATFORM)}.>", subjects.LORE_DOCUMENT_STATUS), deny_publish=(OPS_ALL,)
        )
    }
    # No engine right: the player namespace of the user it acts for only (mnemo/shared/namespaces.py).
    table[PLAYER] = Grant((subjects.CONTEXT_ASSEMBLE, *subjects.MEMORY_PLAYER_CALLS), (f"{inbox_prefix(PLAYER)}.>",))
    table.update({name: service_grant(name, role) for name, role in ROLES.items()})
    publish, subscribe = _core(HOST)
    host_publish = [  # one core connection for every service of the embedded stack: what their cores do
        *publish,
        *_points_api("write"),
        *_points_api("read"),
        f"{JS_API}.STREAM.PURGE.{subjects.POINTS_STREAM}",
        *(api for stream in ROLES["privacy"].purges for api in _purge_api(stream)),  # erasure's stream scans
        *_uploads_api(),  # erasure deletes uploaded files
        subjects.CHAT_KEYED,  # the memory service's chat import
    ]
    table[HOST] = Grant(tuple(dict.fromkeys(host_publish)), tuple(subscribe))
    table[ADMIN] = Grant((">",), (">",))
    return table


def env_name(user: str) -> str:
    """The environment variable the shipped configuration reads ``user``'s password from."""
    return "MNEMO_NATS_PASSWORD_" + user.upper().replace("-", "_")


def render_authorization(passwords: Mapping[str, str] | None = None) -> str:
    """nats-server's ``authorization`` block for :func:`grants`; each password is ``passwords[user]``, or
    without ``passwords`` a reference to :func:`env_name` (the server refuses to start when one is unset)."""
    lines = [
        "# Generated by `mnemo nats-config` from mnemo/runtime/nats_auth.py: do not edit by hand.",
        "# Least-privilege users of mnemo (docs/security.md: Threat model). Passwords come from the environment.",
        "authorization {",
        "  users = [",
    ]
    for user, grant in grants().items():
        password = json.dumps(passwords[user]) if passwords is not None else f"${env_name(user)}"
        lines.append(f"    {{ user: {json.dumps(user)}, password: {password}, permissions: {{")
        for verb, allowed in (("publish", grant.publish), ("subscribe", grant.subscribe)):
            lines.append(f"        {verb}: {{ allow: [")
            lines += [f"          {json.dumps(subject)}" for subject in allowed]
            denied = grant.deny_publish if verb == "publish" else ()
            if denied:
                lines.append("        ], deny: [")
                lines += [f"          {json.dumps(subject)}" for subject in denied]
            lines.append("        ] }")
        if grant.responds:
            lines.append("        allow_responses: true")
        lines.append("    } }")
    lines += ["  ]", "}", ""]
    return "\n".join(lines)


def write_passwords(directory: Path) -> dict[str, str]:
    """A random password per user as ``<user>.password`` in ``directory`` (mode 0600), kept when present:
    what ``MNEMO_NATS__PASSWORD_DIR`` reads."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    passwords: dict[str, str] = {}
    for user in grants():
        path = directory / f"{user}.password"
        if not path.exists():
            path.touch(mode=0o600)
            path.write_text(secrets.token_urlsafe(24) + "\n")
        passwords[user] = path.read_text().strip()
    return passwords

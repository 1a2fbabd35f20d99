"""The contract registry is the single source: every public subject is in it, its examples are valid, and every
file generated from it (AsyncAPI, JSON Schema bundle, the Python client's models and operation table, the
contract table in docs/contract.md) is the committed one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import mnemo_client
from mnemo.runtime.contract_artifacts import artifacts, outside_imports
from mnemo.runtime.contract_doc import asyncapi_document
from mnemo.runtime.contract_schema import schema_bundle
from mnemo.shared import subjects
from mnemo.shared.contract_registry import ERROR_CODES, OPERATIONS, models, nats_msg_id, operation
from mnemo.shared.rpc import strict
from mnemo_client.wire import operations as client_ops

ROOT = Path(__file__).resolve().parents[2]
GENERATED = artifacts(ROOT)


@pytest.mark.parametrize("path", sorted(GENERATED), ids=str)
def test_the_committed_file_is_the_generated_one(path: Path) -> None:
    committed = (ROOT / path).read_text() if (ROOT / path).exists() else None
    assert committed == GENERATED[path], f"{path} is stale: run `mnemo contract-doc` (make docs)"


def test_every_public_subject_is_in_the_registry_once() -> None:
    public = {*subjects.CHAT_INBOUND}
    public |= {
        v for k, v in vars(subjects).items() if k.isupper() and isinstance(v, str) and v.startswith("mnemo.rpc.")
    }
    registered = [op.subject for op in OPERATIONS]
    assert sorted(registered) == sorted(public)
    assert len({op.name for op in OPERATIONS}) == len(OPERATIONS)


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_each_entry_is_consistent_and_its_examples_are_accepted(op: Any) -> None:
    assert set(op.errors) <= set(ERROR_CODES)
    if op.kind == "event":
        assert op.reply is None
        assert not op.errors
        assert op.msg_id
        assert set(op.msg_id) <= set(op.payload.model_fields), "Nats-Msg-Id fields are payload fields"
        assert op.subject in subjects.CHAT_INBOUND
    else:
        assert op.reply is not None
        assert "bad_request" in op.errors
    strict(op.payload).model_validate(op.example)  # as the service parses it: unknown fields refused
    if op.reply_example is not None:
        assert op.reply is not None
        op.reply.model_validate(op.reply_example)
    assert operation(op.name) is op
    assert operation(op.subject) is op


def test_an_example_the_model_refuses_would_fail() -> None:
    op = operation("memory.promote")
    with pytest.raises(ValidationError):
        strict(op.payload).model_validate({**op.example, "campaign": "typo"})


def test_asyncapi_has_every_subject_including_promote_and_unpromote() -> None:
    channels = asyncapi_document()["channels"]
    assert set(channels) == {op.subject for op in OPERATIONS} | {op.keyed_subject for op in OPERATIONS} - {""}
    assert {subjects.MEMORY_PROMOTE, subjects.MEMORY_UNPROMOTE} <= set(channels)
    assert "not_found" in channels[subjects.MEMORY_PROMOTE]["description"]


def test_the_schema_bundle_names_every_model_and_operation() -> None:
    bundle = schema_bundle()
    assert {m.__name__ for m in models()} <= set(bundle["$defs"])
    rows = {row["subject"]: row for row in bundle["x-mnemo-operations"]}
    assert rows[subjects.LORE_IMPORT]["payload"] == {"$ref": "#/$defs/LoreImportRequest"}
    assert rows[subjects.LORE_IMPORT]["reply"] == {"$ref": "#/$defs/LoreImportReply"}
    assert rows[subjects.MESSAGE_CREATED]["reply"] is None
    for row in rows.values():  # every reference resolves inside the bundle
        for ref in (row["payload"], row["reply"]):
            assert ref is None or ref["$ref"].removeprefix("#/$defs/") in bundle["$defs"]


def test_the_python_clients_models_have_the_registrys_json_schema() -> None:
    """The client's exported models are the registry's (one source): the JSON schema the bundle publishes is
    the one each exported model has."""
    bundle = schema_bundle()["$defs"]
    for name in bundle:
        client_model = getattr(mnemo_client, name)
        server_schema = client_model.model_json_schema(ref_template="#/$defs/{model}")
        own = server_schema.pop("$defs", {})
        assert server_schema == bundle[name], name
        for nested, schema in own.items():
            assert schema == bundle[nested], f"{name}.{nested}"


def test_the_python_clients_operation_table_is_the_registry() -> None:
    assert list(client_ops.OPERATIONS) == [op.name for op in OPERATIONS]
    for op in OPERATIONS:
        mine = client_ops.OPERATIONS[op.name]
        assert (mine.subject, mine.kind, mine.errors, mine.msg_id) == (op.subject, op.kind, op.errors, op.msg_id)
        assert mine.payload.__name__ == op.payload.__name__
        assert (mine.reply and mine.reply.__name__) == (op.reply and op.reply.__name__)
        if op.kind == "event":
            assert mnemo_client.nats_msg_id(mine, op.example) == nats_msg_id(op, op.example)


def test_the_contract_modules_import_nothing_beyond_the_contract() -> None:
    """The services import their wire models from the client package: a contract module that imported the server
    would stop the client installing alone (and the check must see such an import)."""
    assert all(not outside_imports(m.__module__) for m in models())
    assert outside_imports("mnemo.shared.rpc")


def test_event_ids_tell_retries_from_new_events() -> None:
    edited = operation("chat.message.edited")
    first = nats_msg_id(edited, edited.example)
    assert nats_msg_id(edited, dict(edited.example)) == first
    assert nats_msg_id(edited, {**edited.example, "edited_at": "2026-11-01T18:07:00Z"}) != first
    created = operation("chat.message.created")
    other_tenant = {**created.example, "tenant_id": "t2"}
    assert nats_msg_id(created, other_tenant) != nats_msg_id(created, created.example)


def test_the_schema_bundle_tells_clients_how_to_make_each_events_msg_id() -> None:
    rows = {row["name"]: row for row in schema_bundle()["x-mnemo-operations"]}
    for op in OPERATIONS:
        assert rows[op.name]["msg_id"] == list(op.msg_id)
    assert rows["chat.message.created"]["msg_id"] == ["tenant_id", "conversation_id", "message_id"]

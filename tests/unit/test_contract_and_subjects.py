"""The public contract: subjects are built in one place and documented in the AsyncAPI document."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.runtime.contract_doc import asyncapi_document
from mnemo.shared import subjects
from mnemo.shared.contract_registry import OPERATIONS


def test_asyncapi_documents_every_public_subject_with_its_payload_schema() -> None:
    doc = asyncapi_document()
    lore = {subjects.LORE_IMPORT, subjects.LORE_EXPORT, subjects.LORE_LIST, subjects.LORE_ATTACH, subjects.LORE_DETACH}
    lore |= {subjects.LORE_BOOK_CREATE, subjects.LORE_BOOK_DELETE, subjects.LORE_BOOK_RENAME}
    lore |= {subjects.LORE_ENTRY_CREATE, subjects.LORE_ENTRY_UPDATE, subjects.LORE_ENTRY_DELETE}
    lore |= {subjects.LORE_DOCUMENT_IMPORT, subjects.LORE_DOCUMENT_GET, subjects.LORE_DOCUMENT_LIST}
    # mnemo.lore.document.status.v1 goes the other way (mnemo publishes it on core NATS): the registry holds what
    # clients send, so it is documented in docs/documents.md and docs/contract.md, not in this document.
    lore |= {subjects.LORE_DOCUMENT_DELETE, subjects.LORE_TEST_ACTIVATION}
    memory = {
        subjects.MEMORY_CONVERT_TO_LORE,
        subjects.MEMORY_DELETE,
        subjects.MEMORY_EDIT,
        subjects.MEMORY_LIST,
        subjects.MEMORY_INDEX_STATUS,
    }
    memory |= {subjects.MEMORY_PROMOTE, subjects.MEMORY_UNPROMOTE}
    memory |= {*subjects.MEMORY_PLAYER_CALLS, *subjects.MEMORY_ENGINE_CALLS}
    privacy = {subjects.PRIVACY_ERASE_USER, subjects.PRIVACY_ERASE_TENANT, subjects.PRIVACY_EXPORT_USER}
    reads = {subjects.CONVERSATION_LIST, subjects.CONVERSATION_TIMELINE, subjects.CHAT_IMPORT}
    reads |= {subjects.KNOWLEDGE_FACT_LIST, subjects.KNOWLEDGE_FACT_ADD, subjects.KNOWLEDGE_FACT_EDIT}
    reads |= {subjects.KNOWLEDGE_FACT_RETRACT, subjects.KNOWLEDGE_FACT_HISTORY}
    ops = {subjects.OPS_USAGE}  # the operators' (admin-only) usage report
    # Each chat event also on its keyed (v2) subject, the tenant and conversation (bot, persona) as tokens.
    keyed = {op.keyed_subject for op in OPERATIONS if op.kind == "event"}
    assert len(keyed) == len(subjects.CHAT_INBOUND)
    assert all(".v2.{tenant_id}." in s for s in keyed)
    assert set(doc["channels"]) == {
        *subjects.CHAT_INBOUND,
        *keyed,
        subjects.CONTEXT_ASSEMBLE,
        *lore,
        *memory,
        *privacy,
        *reads,
        *ops,
    }
    schemas = doc["components"]["schemas"]
    for name in ("MessageCreated", "MessageEdited", "MessageDeleted", "BotUpserted", "PersonaUpserted"):
        assert name in schemas
    created = schemas["MessageCreated"]
    assert {"tenant_id", "message_id", "content", "bot_ids", "persona_id"} <= set(created["properties"])
    assert "idempotency" in created["properties"]["message_id"]["description"]
    assert {"source", "type", "bot_id", "converted_to_lore", "limit", "offset"} <= set(
        schemas["MemoryListRequest"]["properties"]
    )
    lore_import = schemas["LoreImportRequest"]["properties"]
    assert {"data", "data_base64", "attach_to_bots", "owner_user_id", "format"} <= set(lore_import)
    assert {"user_id", "lorebook_id", "uid", "changes"} <= set(schemas["LoreEntryUpdateRequest"]["properties"])
    document_import = schemas["DocumentImportRequest"]["properties"]
    assert {"owner_user_id", "name", "object", "data_base64", "attach_to_bots", "document_id"} <= set(document_import)


def test_every_inbound_subject_is_captured_by_the_chat_stream() -> None:
    prefix = subjects.CHAT_STREAM_SUBJECTS[0].removesuffix(">")
    assert all(s.startswith(prefix) for s in subjects.CHAT_INBOUND)
    assert all(s.endswith(".v1") for s in subjects.CHAT_INBOUND)


@given(st.from_regex(r"[a-z][a-z_]{0,15}(\.[a-z][a-z_]{0,15}){0,3}", fullmatch=True))
def test_log_subject_round_trips(event_type: str) -> None:
    assert subjects.event_type_of(subjects.log_subject(event_type)) == event_type


@pytest.mark.parametrize("bad", ["", ".x", "x.", "a b"])
def test_log_subject_rejects_malformed_types(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid event type"):
        subjects.log_subject(bad)


def test_durable_and_queue_names_have_no_dots() -> None:
    for service in ("ingest", "memory-extractor", "context.assembler"):
        assert "." not in subjects.durable(service)
        assert "." not in subjects.queue_group(service)

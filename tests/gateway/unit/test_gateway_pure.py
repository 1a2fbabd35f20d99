"""The gateway's pure parts: API keys and their file, request ids, the export stream, the operation table."""

from __future__ import annotations

import json

import pytest

from mnemo.services.gateway.auth import KeyFileError, KeyRing, digest, new_key, parse_key_file
from mnemo.services.gateway.bridge import msg_id
from mnemo.services.gateway.export import export_chunks
from mnemo.services.gateway.limits import ApiKeyRateLimiter
from mnemo.services.gateway.operations import OPERATIONS, strict
from mnemo.shared import subjects
from mnemo_client.wire.lore_contract import LoreAttachRequest


def test_a_key_acts_for_its_tenant_only_whether_clear_or_hashed(tmp_path):
    key, line = new_key("t2")
    path = tmp_path / "keys"
    path.write_text(f"# staging keys\n\n{line}  # the t2 platform\n")
    ring = KeyRing.load({"dev-key": "t1"}, path)
    assert (ring.tenant_of("dev-key"), ring.tenant_of(key)) == ("t1", "t2")
    assert ring.tenant_of("dev-key ") is None
    assert ring.tenant_of("") is None
    assert key not in path.read_text()


def test_a_key_holds_the_engine_right_only_when_granted(tmp_path):
    key, line = new_key("t2", engine=True)
    plain, plain_line = new_key("t2")
    path = tmp_path / "keys"
    path.write_text(f"{line}\n{plain_line}\n")
    ring = KeyRing.load({"dev": "t1", "gm": "t1 engine"}, path)
    grants = [ring.grant_of(k) for k in ("dev", "gm", key, plain)]
    assert [(g.tenant, g.engine) for g in grants if g] == [("t1", False), ("t1", True), ("t2", True), ("t2", False)]
    with pytest.raises(KeyFileError, match="engine"):
        parse_key_file(f"{digest('k')} t1 admin\n", "keys")


def test_a_key_holds_the_operator_right_only_when_granted(tmp_path):
    key, line = new_key("t2", operator=True)
    both, both_line = new_key("t2", engine=True, operator=True)
    path = tmp_path / "keys"
    path.write_text(f"{line}\n{both_line}\n")
    ring = KeyRing.load({"dev": "t1", "ops": "t1 operator", "all": "t1 operator engine"}, path)
    grants = [ring.grant_of(k) for k in ("dev", "ops", "all", key, both)]
    assert [tuple(g) for g in grants if g] == [
        ("t1", False, False), ("t1", False, True), ("t1", True, True), ("t2", False, True), ("t2", True, True)
    ]  # fmt: skip
    for bad in ("t1 operator operator", "t1 engine admin", "t1 operator engine x"):
        with pytest.raises(KeyFileError, match="operator"):
            parse_key_file(f"{digest('k')} {bad}\n", "keys")


@pytest.mark.parametrize(
    "line", ["sha256:abc t1", f"{digest('k')} ", f"md5:{'0' * 64} t1", f"sha256:{'z' * 64} t1", "t1 sha256:00"]
)
def test_a_malformed_key_file_line_is_refused_with_its_line_number(line):
    with pytest.raises(KeyFileError, match=r"keys:2"):
        parse_key_file(f"\n{line}\n", "keys")


def test_request_ids_are_scoped_by_tenant_and_default_to_a_digest_of_the_request():
    assert msg_id("t1", "r-1", "s", b"{}") == "t1:r-1"
    assert msg_id("t1", "r-1", "s", b"{}") != msg_id("t2", "r-1", "s", b"{}")
    same = msg_id("t1", None, "s", b'{"a":1}')
    assert same == msg_id("t1", None, "s", b'{"a":1}')
    assert same != msg_id("t1", None, "s", b'{"a":2}')
    assert same != msg_id("t1", None, "s2", b'{"a":1}')


@pytest.mark.parametrize(
    "reply",
    [
        {
            "lorebook_id": "b",
            "name": "N",
            "data": {"entries": {str(i): {"uid": i, "content": "é" * i} for i in range(150)}},
        },
        {"lorebook_id": "b", "name": "N", "data": {"name": "x", "extensions": {"a": [1]}, "entries": {}}},
        {"lorebook_id": "b", "name": "N", "data": {"no": "entries"}},
        {"data": {"entries": {"1": None}}},
    ],
)
def test_the_streamed_export_is_the_reply_exactly(reply):
    chunks = list(export_chunks(reply, per_chunk=64))
    assert json.loads(b"".join(chunks)) == reply
    if len(reply["data"].get("entries") or {}) > 64:
        assert len(chunks) > 3


def test_every_public_subject_is_an_operation_at_the_path_its_subject_names():
    public = {*subjects.CHAT_INBOUND} | {
        getattr(subjects, name) for name in dir(subjects) if isinstance(getattr(subjects, name), str)
        and getattr(subjects, name).startswith("mnemo.rpc.")
    }  # fmt: skip
    # The operators' requests (the usage report across tenants) are not the tenants' to call over HTTP.
    assert {op.subject for op in OPERATIONS} == public - {subjects.OPS_USAGE}
    paths = {op.subject: op.path for op in OPERATIONS}
    assert paths[subjects.LORE_BOOK_CREATE] == "/v1/lore/book/create"
    assert paths[subjects.MESSAGE_CREATED] == "/v1/chat/message/created"
    assert len(set(paths.values())) == len(paths)


def test_rpc_bodies_refuse_unknown_fields_under_the_models_name():
    model = strict(LoreAttachRequest)
    assert model.__name__ == "LoreAttachRequest"
    with pytest.raises(ValueError, match="extra"):
        model.model_validate({"tenant_id": "t", "lorebook_id": "b", "bot_ids": ["x"], "bot_id": "x"})


def test_a_key_gets_its_burst_then_its_rate_and_keys_do_not_share_a_bucket():
    now = [0.0]
    limiter = ApiKeyRateLimiter(rate_per_s=2.0, burst=3, clock=lambda: now[0])
    assert [limiter.take("a") for _ in range(3)] == [None, None, None]
    assert limiter.take("a") == pytest.approx(0.5)
    assert limiter.take("b") is None
    now[0] = 0.5
    assert limiter.take("a") is None
    assert limiter.take("a") == pytest.approx(0.5)
    now[0] = 100.0
    assert [limiter.take("a") for _ in range(4)][:3] == [None, None, None], "the bucket refills to the burst only"
    assert not ApiKeyRateLimiter(0.0, 5).enabled
    assert all(ApiKeyRateLimiter(0.0, 5).take("a") is None for _ in range(100))

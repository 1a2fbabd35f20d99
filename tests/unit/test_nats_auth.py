"""The least-privilege table (``mnemo/runtime/nats_auth.py``), the shipped configuration rendered from it, and how a
process picks its NATS credentials (``mnemo/shared/natsconn.py``)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from pydantic import SecretStr

from mnemo.runtime.catalog import SERVICES
from mnemo.runtime.nats_auth import (
    ADMIN,
    HOST,
    PLATFORM,
    PLAYER,
    ROLES,
    grants,
    render_authorization,
    write_passwords,
)
from mnemo.runtime.secure import write_self_signed
from mnemo.services.context_assembler import index_status
from mnemo.shared import subjects
from mnemo.shared.natsconn import NatsCredentialsError, connect_options, nats_user
from mnemo.shared.settings import NatsSettings, Settings

ROOT = Path(__file__).resolve().parents[2]
RPCS = [v for k, v in vars(subjects).items() if k.isupper() and isinstance(v, str) and v.startswith("mnemo.rpc.")]


def test_the_shipped_configuration_is_rendered_from_the_table() -> None:
    shipped = (ROOT / "deploy" / "nats-auth.conf").read_text()
    assert shipped == render_authorization(), "run: mnemo nats-config (deploy/nats-auth.conf is out of date)"
    assert "include ./nats-auth.conf" in (ROOT / "deploy" / "nats-secure.conf").read_text()


def test_every_service_has_a_user_and_every_rpc_exactly_one_responder() -> None:
    assert set(ROLES) == {s.name for s in SERVICES}
    assert set(grants()) == {PLATFORM, PLAYER, HOST, ADMIN, *ROLES}
    assert RPCS  # the subjects module still spells them as constants
    for rpc in RPCS:
        assert [name for name, role in ROLES.items() if rpc in role.answers] != [], rpc
        assert sum(rpc in role.answers for role in ROLES.values()) == 1, rpc


def test_the_platform_gets_chat_rpcs_and_the_uploads_bucket_only() -> None:
    platform = grants()[PLATFORM]
    assert platform.publish[:2] == ("mnemo.chat.>", "mnemo.rpc.>")
    # Beyond those, only the documents' Object Store bucket (uploads; the stream names nats-py looks it up by)
    # and nothing of the log or dead letters.
    beyond = [s for s in platform.publish[2:] if s != "$JS.API.STREAM.NAMES"]
    assert all("UPLOADS" in subject for subject in beyond), platform.publish
    assert not any(s.startswith(("mnemo.log", "mnemo.dlq", "$JS.API.CONSUMER.CREATE.MNEMO_")) for s in platform.publish)
    assert platform.subscribe == ("_INBOX.platform.>", "mnemo.lore.document.status.v1")
    assert not platform.responds


def test_the_player_user_calls_the_memory_api_for_its_player_and_has_no_engine_right() -> None:
    player = grants()[PLAYER]
    assert set(player.publish) == {subjects.CONTEXT_ASSEMBLE, *subjects.MEMORY_PLAYER_CALLS}
    assert not set(player.publish) & set(subjects.MEMORY_ENGINE_CALLS)
    assert player.subscribe == ("_INBOX.player.>",)
    assert set(subjects.MEMORY_ENGINE_CALLS) <= set(ROLES["memory"].answers), "someone answers the engine's calls"


def test_services_get_their_own_subjects_only() -> None:
    table = grants()
    for name, grant in table.items():
        if name in (ADMIN,):
            continue
        assert ">" not in grant.publish, name
        assert "$JS.API.>" not in grant.publish, name
        # Services publish no chat event or request, except ingest's v1 router (the keyed copies of v1 events)
        # and the memory service's chat import (mnemo.rpc.chat.import.v1 publishes the file's messages).
        callers = (PLATFORM, PLAYER)
        chat = [s for s in grant.publish if s.startswith(("mnemo.chat", "mnemo.rpc"))]
        keyed = name in ("ingest", "memory", HOST)
        assert chat == ([subjects.CHAT_KEYED] if keyed else []) or name in callers, name
        assert subjects.LOG_ALL not in grant.subscribe, name
        assert subjects.DLQ_ALL not in grant.subscribe, name
        others_dlq = [
            s for s in grant.publish if s.startswith("mnemo.dlq.") and s != subjects.dead_letter_subject(name)
        ]
        assert others_dlq == [], name
        assert [s for s in grant.subscribe if s.startswith("_INBOX")] == [f"_INBOX.{name}.>"], name
    assert "mnemo.rpc.context.assemble.v1" not in table["ingest"].subscribe
    assert table["ingest"].responds is False
    assert subjects.POINTS_ALL in table["embedding"].publish
    assert subjects.POINTS_ALL not in table["context-assembler"].publish


def test_the_context_assembler_reads_the_embedding_durable_s_info_and_nothing_more_of_it() -> None:
    publish = grants()["context-assembler"].publish
    info = f"$JS.API.CONSUMER.INFO.{subjects.LOG_STREAM}.{index_status.EMBEDDING_DURABLE}"
    assert info in publish, "memory.index_status's `pending` reads the embedding durable's backlog"
    consumer_api = [s for s in publish if s.startswith(("$JS.API.CONSUMER.", "$JS.ACK."))]
    # Its own follower's ordered consumers on the points stream, and that one info: no wildcard on the log.
    assert [s for s in consumer_api if subjects.POINTS_STREAM not in s] == [info]
    assert not [s for s in publish if s.startswith(f"$JS.API.STREAM.MSG.GET.{subjects.LOG_STREAM}")]


def test_no_password_configured_means_no_authentication() -> None:
    settings = Settings(service_name="ingest")
    assert nats_user(settings, "ingest") is None
    assert connect_options(settings, "ingest") == {"inbox_prefix": "_INBOX"}


def test_a_process_connects_as_its_service_with_its_own_password_file(tmp_path: Path) -> None:
    passwords = write_passwords(tmp_path / "pw")
    assert oct((tmp_path / "pw" / "ingest.password").stat().st_mode & 0o777) == "0o600"
    assert write_passwords(tmp_path / "pw") == passwords  # kept, not regenerated
    settings = Settings(service_name="stack", nats=NatsSettings(password_dir=tmp_path / "pw"))
    options = connect_options(settings, "ingest")
    assert options == {"inbox_prefix": "_INBOX.ingest", "user": "ingest", "password": passwords["ingest"]}
    assert connect_options(settings)["user"] == "stack"  # the embedded stack's shared core
    explicit = Settings(nats=NatsSettings(user="lore", password=SecretStr("s3cret")))
    assert connect_options(explicit, "ingest") == {"inbox_prefix": "_INBOX.lore", "user": "lore", "password": "s3cret"}
    with pytest.raises(NatsCredentialsError, match="nobody"):
        connect_options(Settings(nats=NatsSettings(password_dir=tmp_path / "pw")), "nobody")


def test_a_ca_file_turns_tls_on(tmp_path: Path) -> None:
    ca, _, _ = write_self_signed(tmp_path)
    options = connect_options(Settings(nats=NatsSettings(tls_ca_file=ca)))
    assert isinstance(options["tls"], ssl.SSLContext)
    assert options["tls"].verify_mode == ssl.CERT_REQUIRED
    assert options["tls"].check_hostname


def test_nats_config_writes_a_file_with_generated_passwords(tmp_path: Path) -> None:
    from mnemo.runtime.cli import main

    out = tmp_path / "auth.conf"
    assert main(["nats-config", "--out", str(out), "--passwords", str(tmp_path / "pw")]) == 0
    text = out.read_text()
    assert (tmp_path / "pw" / "platform.password").read_text().strip() in text
    assert "$MNEMO_NATS_PASSWORD" not in text

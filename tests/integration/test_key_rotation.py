"""Key rotation on a populated store (SecantusDB): data-key rotation of one tenant re-encrypts its log and read
models under new keys, with progress, resuming after an interruption (in process, a CLI run stopped midway, a
CLI run killed with SIGKILL); KEK rotation re-wraps every data key without touching data, resuming too. Nothing reads differently
afterwards, and the other tenant is untouched."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from pymongo import AsyncMongoClient

from mnemo.runtime import keys_cli
from mnemo.shared.bootstrap import open_core
from mnemo.shared.crypto import token_key_id
from mnemo.shared.eventlog.codec import EventCodec
from mnemo.shared.eventlog.mongo import MongoEventStore
from mnemo.shared.events.envelope import EventRegistry, NewEvent
from mnemo.shared.events.recorded import MESSAGE_RECORDED, REGISTRY, conversation_stream
from mnemo.shared.key_rotation import JOBS
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.settings import Settings

pytestmark = pytest.mark.integration
T0 = datetime(2026, 5, 1, tzinfo=UTC)
TENANT, OTHER = "t-rot", "t-other"
USERS = ("u0", "u1", "u2")
PER_USER = 40


def message(tenant: str, user: str, i: int) -> NewEvent:
    return NewEvent(
        type=MESSAGE_RECORDED.name,
        tenant_id=tenant,
        payload={
            "user_id": user, "conversation_id": "c", "message_id": f"m{i}", "role": "user", "author_id": "p",
            "author_name": f"{user}-author", "content": f"{tenant} {user} line {i}",
            "created_at": (T0 + timedelta(minutes=i)).isoformat(), "bot_ids": ["b"], "persona_id": "p",
            "index": i, "tokens": 5,
        },
    )  # fmt: skip


async def populate(settings: Settings) -> None:
    core = await open_core(settings)
    try:
        for tenant, users in ((TENANT, USERS), (OTHER, ("u0",))):
            for user in users:
                stream = conversation_stream(tenant, user, "c")
                await core.store.append(stream, 0, [message(tenant, user, i) for i in range(PER_USER)])
        await ReadModels(core.db, core.cipher).apply([e async for e in core.store.read_all()])
    finally:
        await core.close()


async def contents(settings: Settings) -> dict[str, list[str]]:
    """What a fresh process reads: the log's payloads and the read model's messages, per tenant and user."""
    core = await open_core(settings)
    try:
        out: dict[str, list[str]] = {}
        async for env in core.store.read_all():
            out.setdefault(f"log {env.tenant_id}/{env.payload['user_id']}", []).append(env.payload["content"])
        read_models = ReadModels(core.db, core.cipher)
        for tenant, users in ((TENANT, USERS), (OTHER, ("u0",))):
            for user in users:
                messages = await read_models.recent(tenant, user, "c", 1000)
                out[f"rm {tenant}/{user}"] = [f"{m.author_name}: {m.content}" for m in messages]
        return out
    finally:
        await core.close()


async def raw(settings: Settings) -> dict[str, list[dict[str, Any]]]:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(settings.mongodb_url)
    try:
        db = client[settings.mongodb_db]
        return {n: await db[n].find().sort("_id", 1).to_list() for n in await db.list_collection_names()}
    finally:
        await client.close()


def token_keys(docs: dict[str, list[dict[str, Any]]], tenant: str) -> set[str]:
    ids = set()
    for name in ("events", "rm_messages"):
        for d in docs[name]:
            if d.get("tenant_id") == tenant:
                values = [*d.values(), *(d["payload"].values() if isinstance(d.get("payload"), dict) else [])]
                ids |= {k for v in values if (k := token_key_id(v)) is not None}
    return ids


def current_keys(docs: dict[str, list[dict[str, Any]]], tenant: str) -> set[str]:
    return {d["key_id"] for d in docs["tenant_keys"] if d.get("tenant") == tenant and not d.get("retired")}


def cli_env(settings: Settings) -> dict[str, str]:
    assert settings.kek is not None
    env = {**os.environ, "MNEMO_MONGODB_URL": settings.mongodb_url, "MNEMO_MONGODB_DB": settings.mongodb_db,
           "MNEMO_KEK": settings.kek.get_secret_value(), "MNEMO_DATA_DIR": str(settings.data_dir),
           "PYTHONUNBUFFERED": "1"}  # fmt: skip
    if settings.kek_previous is not None:
        env["MNEMO_KEK_PREVIOUS"] = settings.kek_previous.get_secret_value()
    return env


def run_cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mnemo.runtime.cli", "keys", *args], env=cli_env(settings), capture_output=True,
        text=True, timeout=600, check=False, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip


def cli_process(settings: Settings, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mnemo.runtime.cli", "keys", *args], env=cli_env(settings), stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip


async def test_rotating_a_tenants_data_keys_re_encrypts_everything_and_resumes(core_settings: Settings) -> None:
    await populate(core_settings)
    before, before_raw = await contents(core_settings), await raw(core_settings)
    old_keys = token_keys(before_raw, TENANT)
    assert len(old_keys) == len(USERS), "a key per user"
    total = sum(1 for docs in before_raw.values() for d in docs if d.get("tenant_id") == TENANT)

    first = await keys_cli.tenant(core_settings, TENANT, embedded=False, stop_after=50, batch=25)
    assert not first.done
    midway = await raw(core_settings)
    job = midway[JOBS][0]
    assert (job["state"], job["scanned"], job["collection"]) == ("running", 50, "events")
    used = token_keys(midway, TENANT)
    assert used & current_keys(midway, TENANT), "part re-encrypted"
    assert used & old_keys, "part still under the old keys"
    assert await contents(core_settings) == before, "everything reads while the job is half done"

    stopped = run_cli(core_settings, "rotate", "--tenant", TENANT, "--stop-after", "30")
    assert stopped.returncode == 3, stopped.stderr
    assert "events: 120 documents scanned" in stopped.stdout, "the CLI run went on from document 50"

    last = await keys_cli.tenant(core_settings, TENANT, embedded=False)
    assert last.done
    assert last.scanned == total, "resumed where the interrupted runs stopped, not from the start"
    after_raw = await raw(core_settings)
    assert token_keys(after_raw, TENANT) <= current_keys(after_raw, TENANT)
    assert not token_keys(after_raw, TENANT) & old_keys
    assert last.reencrypted == len(USERS) * PER_USER * 2 * 2, "author name and content of each event and row"
    assert await contents(core_settings) == before
    other = [d for n in ("events", "rm_messages") for d in after_raw[n] if d.get("tenant_id") == OTHER]
    assert other == [d for n in ("events", "rm_messages") for d in before_raw[n] if d.get("tenant_id") == OTHER]


async def test_a_rotation_killed_midway_resumes_from_its_saved_position(core_settings: Settings) -> None:
    await populate(core_settings)
    before = await contents(core_settings)
    proc = cli_process(core_settings, "rotate", "--tenant", TENANT, "--batch", "5")
    assert proc.stdout is not None
    while "documents scanned" not in proc.stdout.readline():
        assert proc.poll() is None, "the job ended before reporting progress"
    proc.send_signal(signal.SIGKILL)  # kill -9 right after a batch was reported
    proc.wait(30)
    job = (await raw(core_settings))[JOBS][0]
    assert job["state"] == "running", "killed midway"
    assert job["scanned"] >= 5

    report = await keys_cli.tenant(core_settings, TENANT, embedded=False)
    assert report.done
    after = await raw(core_settings)
    assert report.scanned == sum(1 for docs in after.values() for d in docs if d.get("tenant_id") == TENANT)
    assert token_keys(after, TENANT) <= current_keys(after, TENANT)
    assert await contents(core_settings) == before


async def test_kek_rotation_rewraps_every_data_key_without_touching_data_and_resumes(core_settings: Settings) -> None:
    await populate(core_settings)
    before, before_raw = await contents(core_settings), await raw(core_settings)
    assert core_settings.kek is not None
    old_kek = core_settings.kek
    new_kek = SecretStr(base64.b64encode(os.urandom(32)).decode())
    rotating = core_settings.model_copy(update={"kek": new_kek, "kek_previous": old_kek})

    assert await keys_cli.kek(rotating, embedded=False, stop_after=2) == (2, 0)
    assert await contents(rotating) == before, "during the rotation both KEKs open the keys"
    done = run_cli(rotating, "rotate-kek")
    assert done.returncode == 0, done.stderr
    assert "2 already current" in done.stdout
    assert await keys_cli.kek(rotating, embedded=False) == (0, len(before_raw["tenant_keys"]))

    after_raw = await raw(core_settings)
    assert [d["wrapped"] for d in after_raw["tenant_keys"]] != [d["wrapped"] for d in before_raw["tenant_keys"]]
    assert (after_raw["events"], after_raw["rm_messages"]) == (before_raw["events"], before_raw["rm_messages"])
    retired = core_settings.model_copy(update={"kek": new_kek, "kek_previous": None})
    assert await contents(retired) == before, "the new KEK alone reads everything"
    with pytest.raises(Exception, match="does not open"):
        await contents(core_settings)  # the old KEK alone opens nothing any more


async def test_rotation_moves_events_written_under_the_tenant_key_to_their_owners(core_settings: Settings) -> None:
    """Logs written before per-user keys hold users' text under the tenant's key: after a rotation it is
    under each owner's, so erasing one user shreds it."""
    legacy = EventRegistry()  # the registry as it was: no type names an owner
    for name in REGISTRY.names():
        et = REGISTRY.get(name)
        legacy.register(name, et.model, schema_version=et.schema_version, encrypted=et.encrypted_fields,
                        upcasters=et.upcasters)  # fmt: skip
    core = await open_core(core_settings)
    try:
        old_log = MongoEventStore(core.db, EventCodec(legacy, core.cipher))
        for user in USERS[:2]:
            await old_log.append(
                conversation_stream(TENANT, user, "c"), 0, [message(TENANT, user, i) for i in range(5)]
            )
        tenant_key = (await core.cipher.for_tenant(TENANT)).key_id
    finally:
        await core.close()
    assert token_keys(await raw(core_settings), TENANT) == {tenant_key}

    assert (await keys_cli.tenant(core_settings, TENANT, embedded=False)).done

    core = await open_core(core_settings)
    try:
        owners = {u: (await core.cipher.for_tenant(TENANT, u)).key_id for u in USERS[:2]}
        assert token_keys(await raw(core_settings), TENANT) == set(owners.values())
        await core.cipher.erase(TENANT, USERS[0])
        left = {e.payload["user_id"] async for e in core.store.read_all()}
        assert left == {USERS[1]}, "the erased user's old events no longer read"
    finally:
        await core.close()

"""Key rotation jobs: re-wrap every data key under a new KEK; re-encrypt a tenant's data under new data keys.

KEK rotation (``rotate_kek``) touches only the key store: each data key not wrapped by the current KEK is
unwrapped (the old KEK is still accepted, ``MNEMO_KEK_PREVIOUS``) and wrapped again; no data is re-encrypted.
Key ids stay, so every token still finds its key. A rerun skips what is done, so it resumes after a kill.

Data-key rotation (``rotate_tenant``) gives every scope of the tenant (its own and each user's) a new key,
which new writes use at once here and within ``MNEMO_KEY_CACHE_SECONDS`` elsewhere; the old keys stay,
retired, so everything still reads. Then it walks every collection holding the tenant's documents (the log's
events and the read models) in ``_id`` order and re-encrypts each token of an old key under its scope's new
key, with the same associated data (tenant, record, field), by a conditional update (a document changed
meanwhile is left to the next run). The position is saved after each batch in ``key_rotations``: a run after a
crash resumes there. An event's token moves to its owner's key even when its key is current: events written
before per-user keys (under the tenant's) become their user's, so an erasure shreds them too. What is "old"
is recomputed each run, so a run after the job finished catches tokens a process with a cached old key wrote.
Copies outside MongoDB (JetStream's log stream, backups) keep the old ciphertext: the retired keys must stay
until those copies expire.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared.crypto import FieldCipher, token_key_id
from mnemo.shared.events.envelope import utcnow
from mnemo.shared.events.recorded import REGISTRY
from mnemo.shared.keys import scope_of, tenant_of, wrap_aad

JOBS = "key_rotations"
EVENTS = "events"  # the event log's collection (mnemo/shared/eventlog/mongo.py)
#: Collections without tenant data to re-encrypt (keys themselves, the relay's bookkeeping, the jobs).
NOT_DATA = frozenset({"tenant_keys", "erased_keys", "relay_intents", "relay_receipts", "relay_state", JOBS})
BATCH = 200
Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


async def rotate_kek(
    cipher: FieldCipher, progress: Progress = _quiet, *, stop_after: int | None = None
) -> tuple[int, int]:
    """Re-wrap every data key under the current KEK; returns (re-wrapped, already current). ``stop_after``:
    stop after re-wrapping that many, as an interrupted run would (tests)."""
    keys = await cipher.store.all()
    rewrapped = current = 0
    for i, key in enumerate(keys, 1):
        if stop_after is not None and rewrapped >= stop_after:
            break
        aad = wrap_aad(key.scope)
        if await cipher.kek.is_current(key.wrapped, aad):
            current += 1
        else:
            data_key = await cipher.kek.unwrap(key.wrapped, aad)
            rewrapped += await cipher.store.rewrap(key, await cipher.kek.wrap(data_key, aad))
        if i % 100 == 0 or i == len(keys):
            progress(f"kek: {i}/{len(keys)} data keys checked, {rewrapped} re-wrapped, {current} already current")
    return rewrapped, current


@dataclass
class RotationReport:
    scanned: int  # documents looked at (this run and the runs it resumed)
    reencrypted: int  # fields re-encrypted
    done: bool


async def rotate_tenant(
    db: AsyncDatabase[dict[str, Any]],
    cipher: FieldCipher,
    tenant_id: str,
    progress: Progress = _quiet,
    *,
    stop_after: int | None = None,
    batch: int = BATCH,
) -> RotationReport:
    """Rotate the tenant's data keys (unless a run is unfinished) and re-encrypt; ``stop_after``: stop after
    that many documents of this run, as an interrupted run would (tests)."""
    jobs = db[JOBS]
    job = await jobs.find_one({"_id": tenant_id, "state": "running"})
    if job is None:
        rotated = sorted({k.scope for k in await cipher.store.all() if tenant_of(k.scope) == tenant_id})
        for scope in rotated:
            await cipher.rotate(scope)
        job = {"_id": tenant_id, "state": "running", "collection": "", "last_id": None, "scanned": 0,
               "reencrypted": 0, "started_at": utcnow()}  # fmt: skip
        await jobs.replace_one({"_id": tenant_id}, job, upsert=True)
        progress(f"tenant {tenant_id}: {len(rotated)} data keys rotated")
    keys = [k for k in await cipher.store.all() if tenant_of(k.scope) == tenant_id]
    current = {k.key_id for k in [await cipher.store.get(s) for s in {k.scope for k in keys}] if k is not None}
    scopes = _Scopes({k.key_id: k.scope for k in keys}, current, tenant_id)
    scanned, reencrypted, this_run = int(job["scanned"]), int(job["reencrypted"]), 0
    names = sorted(n for n in await db.list_collection_names() if n not in NOT_DATA and not n.startswith("system."))
    for name in names:
        if name < job["collection"]:
            continue
        last_id = job["last_id"] if name == job["collection"] else None
        while True:
            query: dict[str, Any] = {"tenant_id": tenant_id}
            if last_id is not None:
                query["_id"] = {"$gt": last_id}
            docs = await db[name].find(query).sort("_id", 1).limit(batch).to_list()
            if not docs:
                break
            for doc in docs:
                reencrypted += await _reencrypt(db, name, doc, cipher, scopes)
            scanned += len(docs)
            this_run += len(docs)
            last_id = docs[-1]["_id"]
            position = {"collection": name, "last_id": last_id, "scanned": scanned, "reencrypted": reencrypted}
            await jobs.update_one({"_id": tenant_id}, {"$set": position})
            progress(f"tenant {tenant_id}: {name}: {scanned} documents scanned, {reencrypted} fields re-encrypted")
            if stop_after is not None and this_run >= stop_after:
                return RotationReport(scanned, reencrypted, done=False)
    await jobs.update_one({"_id": tenant_id}, {"$set": {"state": "done", "finished_at": utcnow()}})
    progress(f"tenant {tenant_id}: done, {scanned} documents scanned, {reencrypted} fields re-encrypted")
    return RotationReport(scanned, reencrypted, done=True)


@dataclass(frozen=True)
class _Scopes:
    of_key: dict[str, str]  # every key of the tenant (current and retired) -> its scope
    current: set[str]
    tenant_id: str

    def target(self, collection: str, doc: dict[str, Any], key_id: str) -> str | None:
        """The scope a token should be under, None when it already is (or its key is not the tenant's).

        An event's is its owner's (``key_owner``): events written before per-user keys, under the tenant's
        key, move to their owner's, so erasing the owner shreds them too. Elsewhere the scope is kept."""
        scope = self.of_key.get(key_id)
        if scope is None:
            return None
        if collection == EVENTS and isinstance(doc.get("payload"), dict) and doc.get("type") in REGISTRY:
            scope = scope_of(self.tenant_id, REGISTRY.get(str(doc["type"])).owner(doc["payload"]))
        return scope if key_id not in self.current or self.of_key[key_id] != scope else None


async def _reencrypt(
    db: AsyncDatabase[dict[str, Any]], collection: str, doc: dict[str, Any], cipher: FieldCipher, scopes: _Scopes
) -> int:
    """Tokens are top-level fields of read-model documents and fields of an event's ``payload``."""
    fields = [(k, k, v) for k, v in doc.items()]
    if isinstance(doc.get("payload"), dict):
        fields += [(f"payload.{k}", k, v) for k, v in doc["payload"].items()]
    changes: dict[str, Any] = {}
    for path, name, token in fields:
        key_id = token_key_id(token)
        target = scopes.target(collection, doc, key_id) if key_id is not None else None
        if target is None:
            continue
        tc = await cipher.cipher_for_scope(target, reading=({name: token},))
        record = str(doc["_id"])
        changes[path] = (token, tc.encrypt(record, name, tc.decrypt(record, name, token)))
    if not changes:
        return 0
    match = {"_id": doc["_id"], **{p: old_token for p, (old_token, _) in changes.items()}}
    result = await db[collection].update_one(match, {"$set": {p: new for p, (_, new) in changes.items()}})
    return len(changes) if result.modified_count else 0

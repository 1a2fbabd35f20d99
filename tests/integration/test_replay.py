"""`mnemo replay` rebuilds the read models and the vector index from the log alone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo.shared.bootstrap import open_core
from mnemo.shared.events.recorded import conversation_stream
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.settings import Settings
from mnemo.shared.vectors.port import VectorFilter
from tests.envelopes import message_deleted, message_edited, message_to_append
from tests.integration.event_log import replay_twice

pytestmark = pytest.mark.integration
T0 = datetime(2026, 5, 1, tzinfo=UTC)


async def test_replay_rebuilds_read_models_and_vectors_from_the_log(core_settings: Settings) -> None:
    core = await open_core(core_settings)
    try:
        stream = conversation_stream("t-replay", "u1", "c1")
        edit = message_edited("t-replay", "u1", "c1", "m1", "The lighthouse keeper lied.", T0, 6)
        delete = message_deleted("t-replay", "u1", "c1", "m2", T0)
        texts = ["We reached the lighthouse at dusk.", "The keeper said nobody lives here.", "A ship burned."]
        await core.store.append(
            stream, 0, [*(message_to_append("t-replay", i, t, T0) for i, t in enumerate(texts)), edit, delete]
        )
    finally:
        await core.close()

    await replay_twice(core_settings, 5)

    core = await open_core(core_settings, vectors=True)
    try:
        messages = await ReadModels(core.db, core.cipher).recent("t-replay", "u1", "c1", 10)
        assert [(m.message_id, m.content) for m in messages] == [
            ("m0", texts[0]),
            ("m1", "The lighthouse keeper lied."),
        ], "edits applied, the deleted message gone"
        assert core.vectors is not None
        points = await core.vectors.count(VectorFilter.where(tenant_id="t-replay", kind="message"))
        per_message = {
            m: await core.vectors.count(VectorFilter.where(tenant_id="t-replay", message_id=m))
            for m in ("m0", "m1", "m2")
        }
        assert per_message == {"m0": 1, "m1": 1, "m2": 0}
        assert points == 2, "no vectors duplicated by replaying twice"
    finally:
        await core.close()


async def test_opening_a_core_creates_the_read_model_indexes(core_settings: Settings) -> None:
    """Services open a core at start, which sets up every read model of the catalog; their handlers rely on it
    for the read models' query indexes."""
    core = await open_core(core_settings)
    try:
        names = {
            "rm_messages": "conversation_index",
            "rm_conversations": "by_family_root",
            "summaries": "by_conversation",
            "witnessed": "by_character_message",
            # erasure reads a tenant's rows of every read model (mnemo/shared/readmodels/rows.py)
            "rm_bots": "by_tenant",
            "rm_personas": "by_tenant",
            "lore_timed": "by_tenant",
        }
        for collection, index in names.items():
            assert index in await core.db[collection].index_information(), collection
    finally:
        await core.close()


async def test_replay_in_stream_mode_resets_the_points_stream_and_replicas_follow(core_settings: Settings) -> None:
    """``MNEMO_VECTORS__MODE=stream``: replay publishes the rebuild after a reset marker; a replica that followed
    the old stream and one started afterwards hold the same points, and replaying twice duplicates nothing."""
    import nats

    from mnemo.shared import subjects
    from mnemo.shared.settings import VectorsSettings
    from tests.vector_stream import fresh_points_stream

    settings = core_settings.model_copy(update={"vectors": VectorsSettings(mode="stream")})
    nc = await nats.connect(settings.nats_url)
    await fresh_points_stream(nc)
    core = await open_core(settings)
    try:
        stream = conversation_stream("t-replay", "u1", "c1")
        delete = message_deleted("t-replay", "u1", "c1", "m1", T0)
        texts = ["We reached the lighthouse at dusk.", "The keeper said nobody lives here.", "A ship burned."]
        await core.store.append(
            stream, 0, [*(message_to_append("t-replay", i, t, T0) for i, t in enumerate(texts)), delete]
        )
    finally:
        await core.close()
    early = await open_core(settings.model_copy(update={"data_dir": settings.data_dir / "early"}), vectors="read")
    try:
        await replay_twice(settings, 4)
        info = await nc.jetstream().stream_info(subjects.POINTS_STREAM)
        # the reset marker, two points and one deletion: the first replay's messages were purged
        assert info.state.messages == 1 + 2 + 1
        late = await open_core(settings.model_copy(update={"data_dir": settings.data_dir / "late"}), vectors="read")
        try:
            for replica in (early, late):
                assert replica.follower is not None
                assert await replica.follower.caught_up(10)
                assert replica.vectors is not None
                per_message = {
                    m: await replica.vectors.count(VectorFilter.where(tenant_id="t-replay", message_id=m))
                    for m in ("m0", "m1", "m2")
                }
                assert per_message == {"m0": 1, "m1": 0, "m2": 1}
        finally:
            await late.close()
    finally:
        await early.close()
        await nc.close()

"""What a start adds to an existing stream and what it only reports (``mnemo.shared.streams.reconcile``)."""

from __future__ import annotations

from nats.js.api import StreamConfig

from mnemo.shared import subjects
from mnemo.shared.settings import StreamsSettings
from mnemo.shared.streams import covers, limits_of, reconcile, stream_config


def test_covers_follows_nats_wildcards() -> None:
    assert covers("mnemo.chat.>", "mnemo.chat.message.>")
    assert covers("mnemo.*.x", "mnemo.chat.x")
    assert not covers("mnemo.chat.>", "mnemo.chat")
    assert not covers("mnemo.chat.message.>", "mnemo.chat.>")
    assert not covers("mnemo.log.>", "mnemo.chat.x")


def test_only_unset_limits_are_added_and_set_ones_reported() -> None:
    current = StreamConfig(name="S", subjects=["a.>"], max_age=60.0, max_bytes=-1, max_msgs=5, num_replicas=3)
    wanted = StreamConfig(name="S", subjects=["a.>", "b.>"], max_age=120.0, max_bytes=1000, max_msgs=-1, num_replicas=1)
    changes, differences = reconcile(current, wanted)
    assert changes == {"subjects": ["a.>", "b.>"], "max_bytes": 1000}
    assert differences == [
        "max_age is 60.0 on the server, 120.0 in the settings",
        "num_replicas is 3 on the server, 1 in the settings",
    ]
    assert reconcile(current.evolve(max_bytes=1000), current.evolve(max_bytes=1000)) == ({}, [])


def test_a_stream_that_is_not_mnemos_is_declared_without_limits() -> None:
    # make bench-ingest's raw reference stream: it stopped with KeyError: 'BENCH_RAW' (issue 26).
    config = stream_config("BENCH_RAW", ["bench.raw.>"], StreamsSettings())
    assert (config.max_age, config.max_bytes, config.max_msgs) == (0.0, -1, -1)
    assert limits_of(subjects.CHAT_STREAM, StreamsSettings()).max_age_s > 0

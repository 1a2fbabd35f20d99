"""The infrastructure settings a deployment sets by hand."""

from __future__ import annotations

from mnemo.shared.settings import Settings


def test_several_nats_nodes_are_one_comma_separated_url():
    settings = Settings(nats_url="nats://nats-1:4222, nats://nats-2:4222,nats://nats-3:4222,")
    assert settings.nats_servers == ["nats://nats-1:4222", "nats://nats-2:4222", "nats://nats-3:4222"]
    assert Settings(nats_url="nats://127.0.0.1:4333").nats_servers == ["nats://127.0.0.1:4333"]


def test_streams_have_one_copy_unless_told(monkeypatch):
    assert Settings().streams.replicas == 1
    monkeypatch.setenv("MNEMO_STREAMS__REPLICAS", "3")
    assert Settings().streams.replicas == 3

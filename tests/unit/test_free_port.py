"""``free_port`` hands out ports below the kernel's ephemeral range, where no outgoing connection takes them."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from mnemo.runtime import servers


def test_a_free_port_is_below_the_ephemeral_range_and_bindable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("32768\t60999\n")
    monkeypatch.setattr(servers, "_EPHEMERAL_RANGE", ranges)
    ports = {servers.free_port() for _ in range(20)}
    assert all(servers._FIXED_PORTS_FROM <= p < 32768 for p in ports)
    assert len(ports) > 1  # picked at random: concurrent launchers rarely pick the same one
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports.pop()))


def test_without_room_below_the_ephemeral_range_the_kernel_picks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("1024 65535\n")
    monkeypatch.setattr(servers, "_EPHEMERAL_RANGE", ranges)
    port = servers.free_port()
    assert port >= 1024
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_a_port_to_avoid_is_never_handed_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text(f"{servers._FIXED_PORTS_FROM + 3} 60999\n")  # room for three ports below the range
    monkeypatch.setattr(servers, "_EPHEMERAL_RANGE", ranges)
    low = set(range(servers._FIXED_PORTS_FROM, servers._FIXED_PORTS_FROM + 3))
    for _ in range(20):
        assert servers.free_port(avoid=low) not in low  # all three avoided: the kernel's pick, never one of them


def test_a_planned_cluster_uses_each_port_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mnemo.runtime.nats_cluster import plan_nodes

    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text(f"{servers._FIXED_PORTS_FROM + 12} 60999\n")  # 12 ports for 9: picks would repeat
    monkeypatch.setattr(servers, "_EPHEMERAL_RANGE", ranges)
    for _ in range(20):
        nodes = plan_nodes(f"nats://127.0.0.1:{servers.free_port()}")
        ports = [p for n in nodes for p in (n.port, n.route_port, n.http_port)]
        assert len(set(ports)) == len(ports), ports

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

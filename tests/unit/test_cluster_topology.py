"""``mnemo cluster``'s pieces that need no server: the topology (defaults, file, flags), the NATS nodes'
configuration and URLs, ``MNEMO_NATS_URL`` as a list of servers, and reading pids.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemo.runtime.catalog import SERVICES
from mnemo.runtime.cli import build_parser
from mnemo.runtime.cluster_control import ClusterControlError, find_entry, read_pids, restart, status_lines
from mnemo.runtime.nats_cluster import plan_nodes, servers_for
from mnemo.runtime.servers import MAX_PAYLOAD, nats_node_config
from mnemo.runtime.topology import TopologyError, parse_replica_flags, resolve_topology
from mnemo.shared.settings import Settings

REQUIRED = {
    "ingest": 2,
    "embedding": 2,
    "summarizer": 2,
    "memory-extractor": 2,
    "context-assembler": 2,
    "lore": 1,
    "memory": 1,
    "privacy": 1,
}


def test_the_default_topology_is_the_required_one_for_every_service():
    assert resolve_topology() == REQUIRED
    assert list(resolve_topology()) == [s.name for s in SERVICES]


def test_each_catalog_entry_is_its_services_definition():
    """The host runs a service from the definition its own ``app.py`` declares, under the same name."""
    for spec in SERVICES:
        definition = spec.definition()
        assert definition.name == spec.name
        assert spec.router_factory() is definition.create_router


def test_a_toml_file_then_flags_override_the_defaults(tmp_path: Path):
    file = tmp_path / "topology.toml"
    file.write_text('[replicas]\ningest = 3\n"context-assembler" = 4\nlore = 0\n')
    counts = resolve_topology(file, ["ingest=1", "memory=2,embedding=5"])
    assert counts == {**REQUIRED, "ingest": 1, "context-assembler": 4, "lore": 0, "memory": 2, "embedding": 5}


def test_a_json_file_is_read_too(tmp_path: Path):
    file = tmp_path / "topology.json"
    file.write_text(json.dumps({"replicas": {"summarizer": 3}}))
    assert resolve_topology(file)["summarizer"] == 3


@pytest.mark.parametrize(
    "text",
    ['{"replicas": {"ingets": 2}}', '{"replicas": {"ingest": -1}}', '{"ingest": 2}', '{"replicas": {"lore": true}}'],
)
def test_a_bad_file_is_refused(tmp_path: Path, text: str):
    file = tmp_path / "t.json"
    file.write_text(text)
    with pytest.raises(TopologyError):
        resolve_topology(file)


@pytest.mark.parametrize("flag", ["ingest", "ingest=two", "nope=1", "ingest=-1"])
def test_a_bad_flag_is_refused(flag: str):
    with pytest.raises(TopologyError):
        parse_replica_flags([flag])


def test_the_cli_parses_start_restart_and_status():
    parser = build_parser()
    start = parser.parse_args(["cluster", "--replicas", "ingest=1", "--data-dir", "/tmp/x"])
    assert (start.action, start.target, start.replicas) == ("start", [], ["ingest=1"])
    again = parser.parse_args(["cluster", "restart", "ingest", "2", "--data-dir", "/tmp/x"])
    assert (again.action, again.target) == ("restart", ["ingest", "2"])
    assert parser.parse_args(["cluster", "status"]).action == "status"


def test_node_one_listens_on_the_nats_url_and_every_node_routes_to_all(tmp_path: Path):
    nodes = plan_nodes("nats://127.0.0.1:4222", [5001, 5002])
    assert [(n.name, n.url) for n in nodes] == [
        ("nats-1", "nats://127.0.0.1:4222"),
        ("nats-2", "nats://127.0.0.1:5001"),
        ("nats-3", "nats://127.0.0.1:5002"),
    ]
    config = nats_node_config(nodes[1], nodes, tmp_path / "js")
    assert 'server_name: "nats-2"' in config
    assert 'listen: "127.0.0.1:5001"' in config
    assert f"max_payload: {MAX_PAYLOAD}" in config
    assert str(tmp_path / "js") in config
    for node in nodes:
        assert f"nats-route://127.0.0.1:{node.route_port}" in config


def test_each_process_gets_every_node_starting_at_a_different_one():
    nodes = plan_nodes("nats://127.0.0.1:4222", [5001, 5002])
    lists = [servers_for(nodes, k).split(",") for k in range(3)]
    assert {urls[0] for urls in lists} == {n.url for n in nodes}
    assert all(sorted(urls) == sorted(n.url for n in nodes) for urls in lists)


def test_nats_url_takes_a_comma_separated_list(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MNEMO_NATS_URL", "nats://a:4222, nats://b:4223,nats://c:4224")
    assert Settings().nats_servers == ["nats://a:4222", "nats://b:4223", "nats://c:4224"]
    monkeypatch.setenv("MNEMO_NATS_URL", "nats://127.0.0.1:4222")
    assert Settings().nats_servers == ["nats://127.0.0.1:4222"]


def _pids(tmp_path: Path, supervisor: int) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    processes = [
        {"name": "ingest", "kind": "service", "replica": 1, "pid": 2**22 + 1},
        {"name": "ingest", "kind": "service", "replica": 2, "pid": 2**22 + 2},
        {"name": "nats-1", "kind": "server", "pid": 2**22 + 3, "url": "nats://127.0.0.1:4222", "exit_code": -9},
    ]
    (run / "pids.json").write_text(json.dumps({"supervisor": supervisor, "processes": processes}))
    return tmp_path


def test_a_replica_is_named_when_a_service_has_several(tmp_path: Path):
    doc = read_pids(_pids(tmp_path, 2**22))
    assert find_entry(doc, "ingest", 2)["pid"] == 2**22 + 2
    assert find_entry(doc, "nats-1", None)["url"] == "nats://127.0.0.1:4222"
    with pytest.raises(ClusterControlError, match="several replicas"):
        find_entry(doc, "ingest", None)
    with pytest.raises(ClusterControlError, match="no process"):
        find_entry(doc, "lore", None)


def test_restart_needs_the_running_supervisor_and_status_says_what_is_down(tmp_path: Path):
    data = _pids(tmp_path, 2**22)  # above the default pid_max: no such process
    with pytest.raises(ClusterControlError, match="not running"):
        restart(data, "ingest", 1)
    lines = status_lines(data)
    assert "not running" in lines[0]
    assert any(line.startswith("nats-1") and "down (-9)" in line for line in lines)

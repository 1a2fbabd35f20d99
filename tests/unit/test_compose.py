"""docker-compose.yml cannot be run here (no Docker engine), so it is kept correct by validation:
the compose-spec parser checks the structure, and these tests check what the parser cannot."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from compose_spec import PyCompose

from mnemo.runtime.catalog import SERVICES
from mnemo.shared.vectors.qdrant_server import MIN_SERVER_VERSION

ROOT = Path(__file__).resolve().parents[2]
MNEMO_SERVICES = (
    "ingest",
    "embedding",
    "summarizer",
    "memory_extractor",
    "context_assembler",
    "lore",
    "memory",
    "privacy",
)
GATEWAY = "gateway"  # not in the catalog: an HTTP server and NATS client, not a NATS service


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    # PyYAML resolves anchors and merge keys as Docker does; the validator then sees the final document.
    doc: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return doc


def test_compose_file_passes_the_compose_spec_parser(compose: dict[str, Any]) -> None:
    parsed = PyCompose.from_json(json.dumps(compose))
    parsed.validate()
    assert {"nats-1", "nats-2", "nats-3", "mongo", "qdrant", "otel-collector"} <= set(parsed.service_names())


def test_every_mnemo_service_runs_an_existing_module(compose: dict[str, Any]) -> None:
    commands = {
        name: svc.get("command") for name, svc in compose["services"].items() if svc.get("image") == "mnemo:latest"
    }
    modules = {cmd[-1].removeprefix("mnemo.services.") for cmd in commands.values()}
    assert modules == {*MNEMO_SERVICES, GATEWAY}
    for module in modules:
        assert (ROOT / "mnemo" / "services" / module / "__main__.py").exists(), module


def test_dependencies_and_volumes_are_declared(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, svc in services.items():
        for dep in svc.get("depends_on", {}):
            assert dep in services, f"{name} depends on undefined {dep}"
        for vol in svc.get("volumes", []):
            source = vol.split(":", 1)[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), f"{name} mounts missing {source}"
            else:
                assert source in compose["volumes"], f"{name} mounts undeclared volume {source}"


def test_services_point_at_the_distributed_backends(compose: dict[str, Any]) -> None:
    env = compose["services"]["ingest"]["environment"]
    assert env["MNEMO_NATS_URL"].split(",") == [f"nats://nats-{n}:4222" for n in (1, 2, 3)]
    assert "replicaSet=rs0" in env["MNEMO_MONGODB_URL"]
    assert env["MNEMO_QDRANT_URL"].startswith("http://qdrant:")


def test_nats_is_a_three_node_cluster_with_replicated_streams(compose: dict[str, Any]) -> None:
    conf = (ROOT / "deploy" / "nats.conf").read_text()
    nodes = [name for name in compose["services"] if name.startswith("nats-")]
    assert len(nodes) == 3
    for node in nodes:
        assert compose["services"][node]["environment"]["NATS_SERVER_NAME"] == node  # server_name is per node
        assert f"nats://{node}:6222" in conf, f"{node} is not in the cluster's routes"
    assert "server_name: $NATS_SERVER_NAME" in conf
    assert compose["services"]["ingest"]["environment"]["MNEMO_STREAMS__REPLICAS"] == "3"


def test_replicas_are_the_catalog_defaults(compose: dict[str, Any]) -> None:
    """The same topology as `make cluster`: both read mnemo/runtime/catalog.py's defaults (this one by a test)."""
    for spec in SERVICES:
        service = compose["services"][spec.name]
        assert service["command"][-1] == spec.module, spec.name
        assert service.get("deploy", {}).get("replicas", 1) == spec.replicas, spec.name


def test_the_qdrant_image_serves_every_query_the_adapter_sends(compose: dict[str, Any]) -> None:
    image = compose["services"]["qdrant"]["image"]
    match = re.fullmatch(r"qdrant/qdrant:v(\d+)\.(\d+)\.(\d+)", image)
    assert match, f"pin an exact qdrant version, not {image!r}"
    assert tuple(int(part) for part in match.groups()) >= MIN_SERVER_VERSION


def test_the_gateway_reads_a_valid_key_file_and_listens_on_every_interface(compose: dict[str, Any]) -> None:
    from mnemo.services.gateway.auth import parse_key_file

    gateway = compose["services"][GATEWAY]
    env = gateway["environment"]
    assert env["MNEMO_GATEWAY__HOST"] == "0.0.0.0"
    assert env["MNEMO_NATS_URL"] == compose["services"]["ingest"]["environment"]["MNEMO_NATS_URL"]
    source, target = gateway["volumes"][0].split(":")[:2]
    assert target == env["MNEMO_GATEWAY__API_KEYS_FILE"]
    assert parse_key_file((ROOT / source).read_text()) == {}


def test_every_mnemo_process_is_healthy_only_when_ready(compose: dict[str, Any]) -> None:
    from mnemo.shared.settings import ObserveSettings

    port = ObserveSettings().http_port
    for name, svc in compose["services"].items():
        if svc.get("image") != "mnemo:latest":
            continue
        check = " ".join(svc["healthcheck"]["test"])
        assert f"http://127.0.0.1:{port}/readyz" in check, name


def test_prometheus_scrapes_every_mnemo_service_with_the_charts_rules(compose: dict[str, Any]) -> None:
    from mnemo.shared.settings import ObserveSettings

    mnemo = {name for name, svc in compose["services"].items() if svc.get("image") == "mnemo:latest"}
    mounts = dict(v.split(":")[:2] for v in compose["services"]["prometheus"]["volumes"] if v.startswith("./"))
    assert mounts["./deploy/prometheus/prometheus.yml"] == "/etc/prometheus/prometheus.yml"
    config = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    scraped = {
        name: sd["port"] for job in config["scrape_configs"] for sd in job["dns_sd_configs"] for name in sd["names"]
    }
    assert set(scraped) == mnemo
    assert set(scraped.values()) == {ObserveSettings().http_port}
    assert mounts["./deploy/helm/mnemo/files/alerts.yaml"] == "/etc/prometheus/alerts.yaml"
    assert config["rule_files"] == ["alerts.yaml"]  # beside the mounted config


def test_grafana_shows_the_charts_dashboard(compose: dict[str, Any]) -> None:
    grafana = compose["services"]["grafana"]
    mounts = dict(v.split(":")[:2] for v in grafana["volumes"] if v.startswith("./"))
    dashboard = mounts["./deploy/helm/mnemo/files/dashboards/mnemo.json"]
    provider = yaml.safe_load((ROOT / "deploy/grafana/provisioning/dashboards/mnemo.yaml").read_text())
    assert Path(dashboard).parent.as_posix() == provider["providers"][0]["options"]["path"]
    assert mounts["./deploy/grafana/provisioning"] == "/etc/grafana/provisioning"
    datasource = yaml.safe_load((ROOT / "deploy/grafana/provisioning/datasources/prometheus.yaml").read_text())
    assert datasource["datasources"][0]["url"] == "http://prometheus:9090"

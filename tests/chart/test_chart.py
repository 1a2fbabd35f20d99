"""The Helm chart (deploy/helm/mnemo) rendered offline: lint, the objects every service gets, and the names that
must agree with the Python code (streams, durables, modules, the broker's graceful shutdown)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from mnemo.runtime import consumer_lag, nats_auth
from mnemo.runtime.catalog import SERVICES
from mnemo.shared import subjects
from mnemo.shared.broker import GRACEFUL_TIMEOUT_S
from mnemo.shared.settings import StreamsSettings
from tests.chart.helm import CHART, PRODUCTION_VALUES, ROOT, by_kind, helm, offline_chart, render

WORKERS = {w.service: w for w in consumer_lag.WORKERS}
ALL_SERVICES = {s.name for s in SERVICES} | {"gateway"}


@pytest.mark.parametrize("values", [(), (PRODUCTION_VALUES,)], ids=["default", "production"])
def test_helm_lint_strict_passes(values: tuple[Any, ...]) -> None:
    with offline_chart() as chart:
        args = [arg for file in values for arg in ("--values", str(file))]
        done = helm("lint", "--strict", str(chart), *args)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_consumers_file_is_generated_from_the_python_constants() -> None:
    assert (CHART / "files" / "consumers.json").read_text() == consumer_lag.chart_file_text(), (
        "deploy/helm/mnemo/files/consumers.json is stale: run `make docs`"
    )


def test_every_jetstream_trigger_names_the_real_stream_and_durable(default_objects: list[dict[str, Any]]) -> None:
    scaled = by_kind(default_objects, "ScaledObject")
    seen: dict[str, set[tuple[str, str]]] = {}
    for name, obj in scaled.items():
        for trigger in obj["spec"]["triggers"]:
            if trigger["type"] == "nats-jetstream":
                meta = trigger["metadata"]
                seen.setdefault(name.removeprefix("mnemo-"), set()).add((meta["stream"], meta["consumer"]))
                assert meta["account"] == consumer_lag.GLOBAL_ACCOUNT
                assert meta["natsServerMonitoringEndpoint"] == "mnemo-nats-headless.mnemo.svc.cluster.local:8222"
    # Ingest: its v1 router's durable and one per partition of the chat stream (16 by default, as in the settings).
    partitions = StreamsSettings().ingest_partitions
    assert seen == {name: {(w.stream, d) for d in w.all_durables(partitions)} for name, w in WORKERS.items()}
    assert len(seen["ingest"]) == partitions + 1


def test_ingest_gets_one_trigger_per_partition_of_the_chart_s_count() -> None:
    objects = render(sets=["ingestPartitions=4", "services.ingest.autoscaling.maxReplicas=4"])
    triggers = by_kind(objects, "ScaledObject")["mnemo-ingest"]["spec"]["triggers"]
    assert [t["metadata"]["consumer"] for t in triggers] == [
        subjects.INGEST_V1_DURABLE,
        *(subjects.partition_durable(4, k) for k in range(4)),
    ]
    env = {
        e["name"]: e.get("value")
        for c in by_kind(objects, "Deployment")["mnemo-ingest"]["spec"]["template"]["spec"]["containers"]
        for e in c["env"]
    }
    assert env["MNEMO_STREAMS__INGEST_PARTITIONS"] == "4"


def test_more_ingest_replicas_than_partitions_fail_the_render() -> None:
    with pytest.raises(RuntimeError, match="exceeds ingestPartitions"):
        render(sets=["ingestPartitions=4", "services.ingest.autoscaling.maxReplicas=5"])


def test_request_reply_services_scale_on_cpu(default_objects: list[dict[str, Any]]) -> None:
    scaled = by_kind(default_objects, "ScaledObject")
    for service in ALL_SERVICES - set(WORKERS):
        triggers = scaled[f"mnemo-{service}"]["spec"]["triggers"]
        assert [t["type"] for t in triggers] == ["cpu"], service


def test_production_adds_a_prometheus_trigger_to_the_context_assembler(
    production_objects: list[dict[str, Any]],
) -> None:
    triggers = by_kind(production_objects, "ScaledObject")["mnemo-context-assembler"]["spec"]["triggers"]
    assert [t["type"] for t in triggers] == ["cpu", "prometheus"]
    assert "mnemo_rpc_requests_total" in triggers[1]["metadata"]["query"]


def test_every_service_has_its_objects_and_runs_its_module(default_objects: list[dict[str, Any]]) -> None:
    modules = {s.name: s.module for s in SERVICES} | {"gateway": "mnemo.services.gateway"}
    for kind in ("Deployment", "Service", "PodDisruptionBudget", "ScaledObject", "ServiceMonitor"):
        assert set(by_kind(default_objects, kind)) == {f"mnemo-{s}" for s in ALL_SERVICES}, kind
    for name, deployment in by_kind(default_objects, "Deployment").items():
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert container["command"] == ["python", "-m", modules[name.removeprefix("mnemo-")]]


def test_autoscaled_deployments_leave_the_replica_count_to_keda(default_objects: list[dict[str, Any]]) -> None:
    for name, deployment in by_kind(default_objects, "Deployment").items():
        assert "replicas" not in deployment["spec"], name
    fixed = render(sets=["keda.enabled=false"])
    assert by_kind(fixed, "Deployment")["mnemo-embedding"]["spec"]["replicas"] == 2
    assert not by_kind(fixed, "ScaledObject")


def test_pods_meet_the_restricted_security_profile(default_objects: list[dict[str, Any]]) -> None:
    for name, deployment in by_kind(default_objects, "Deployment").items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in pod["containers"]:
            sc = container["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False, name
            assert sc["capabilities"]["drop"] == ["ALL"], name
            assert sc["readOnlyRootFilesystem"] is True, name
            mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
            assert "/tmp" in mounts, name  # writable scratch on a read-only root
            volumes = {v["name"]: v for v in pod["volumes"]}
            assert all("emptyDir" in volumes[v] or "secret" in volumes[v] for v in mounts.values())


def test_pods_outlive_the_brokers_graceful_shutdown(default_objects: list[dict[str, Any]]) -> None:
    for name, deployment in by_kind(default_objects, "Deployment").items():
        assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > GRACEFUL_TIMEOUT_S, name


def test_probes_ask_the_processes_http_port(default_objects: list[dict[str, Any]]) -> None:
    for name, deployment in by_kind(default_objects, "Deployment").items():
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}, name
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}, name
        assert container["resources"]["requests"]["cpu"], name  # KEDA's cpu trigger needs a request


def test_the_kek_is_read_from_a_secret_never_a_value(production_objects: list[dict[str, Any]]) -> None:
    for name, deployment in by_kind(production_objects, "Deployment").items():
        env = {e["name"]: e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
        if name == "mnemo-gateway":
            assert "MNEMO_KEK" not in env  # a NATS client only
            assert env["MNEMO_NATS__USER"]["value"] == "platform"
            continue
        assert env["MNEMO_KEK"]["valueFrom"]["secretKeyRef"] == {"name": "mnemo-kek", "key": "kek"}
        assert env["MNEMO_NATS__PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "mnemo-nats-auth"
        assert "valueFrom" in env["MNEMO_MONGODB_URL"]
    assert not by_kind(production_objects, "Secret")  # created beforehand, not from values


def test_secrets_from_values_are_created_and_the_kek_kept_on_uninstall() -> None:
    kek = "A" * 43 + "="
    passwords = [f"natsAuth.passwords.{user}=secret-{user}" for user in nats_auth.grants()]
    objects = render(sets=[f"kek.value={kek}", "natsAuth.enabled=true", *passwords])
    secrets = by_kind(objects, "Secret")
    assert secrets["mnemo-kek"]["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert set(secrets["mnemo-nats-auth"]["data"]) == set(nats_auth.grants())
    with pytest.raises(RuntimeError, match=r"natsAuth\.passwords\.admin is required"):
        render(sets=["natsAuth.enabled=true", *passwords[:-1]])


def test_the_nats_servers_get_mnemos_users_and_every_password(production_objects: list[dict[str, Any]]) -> None:
    """The NATS chart includes the generated authorization block and reads each password it names from the
    Secret the services read theirs from (deploy/helm/values-production.yaml wires it)."""
    conf = (CHART / "files" / "nats-auth.conf").read_text()
    assert conf == nats_auth.render_authorization(), "files/nats-auth.conf is stale: run `make docs`"
    configmap = by_kind(production_objects, "ConfigMap")["mnemo-nats-auth"]
    assert configmap["data"]["nats-auth.conf"] == conf.rstrip("\n")
    nats = yaml.safe_load(PRODUCTION_VALUES.read_text())["nats"]
    assert nats["config"]["merge"]["$include"] == "./mnemo-auth/nats-auth.conf"
    env = nats["container"]["env"]
    assert set(env) == set(re.findall(r"\$(MNEMO_NATS_PASSWORD_[A-Z_]+)", conf))
    secret = yaml.safe_load(PRODUCTION_VALUES.read_text())["natsAuth"]["existingSecret"]
    for user in nats_auth.grants():
        assert env[nats_auth.env_name(user)]["valueFrom"]["secretKeyRef"] == {"name": secret, "key": user}
    mounts = [p["value"] for p in nats["container"]["patch"]]
    volumes = [p["value"] for p in nats["podTemplate"]["patch"]]
    assert {"name": "mnemo-auth", "mountPath": "/etc/nats-config/mnemo-auth"} in mounts
    assert {"name": "mnemo-auth", "configMap": {"name": configmap["metadata"]["name"]}} in volumes


def test_keda_reaches_the_nats_monitoring_port(default_objects: list[dict[str, Any]]) -> None:
    policy = by_kind(default_objects, "NetworkPolicy")["mnemo-nats"]["spec"]
    monitor = next(rule for rule in policy["ingress"] if {"port": 8222, "protocol": "TCP"} in rule["ports"])
    keda = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "keda"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "keda-operator"}},
    }
    assert keda in monitor["from"]


def test_the_dashboard_and_the_rules_come_from_their_one_source(default_objects: list[dict[str, Any]]) -> None:
    dashboard = by_kind(default_objects, "ConfigMap")["mnemo-dashboard"]["data"]["mnemo.json"]
    assert json.loads(dashboard) == json.loads((CHART / "files" / "dashboards" / "mnemo.json").read_text())
    rule = by_kind(default_objects, "PrometheusRule")["mnemo"]
    assert rule["spec"] == yaml.safe_load((CHART / "files" / "alerts.yaml").read_text())


@pytest.mark.parametrize(
    "bad",
    [
        "terminationGracePeriodSeconds=20",  # shorter than the graceful shutdown
        "kek.value=not-a-key",
        "services.ingest.autoscaling.maxReplicas=0",
        "services.ingets.replicas=1",  # a typo of a service name
        "mongodb.url=http://mongo",
    ],
)
def test_the_values_schema_rejects_bad_values(bad: str) -> None:
    with pytest.raises(RuntimeError, match="don't meet the specifications of the schema"):
        render(sets=[bad])


def test_every_setting_the_chart_sets_exists(production_objects: list[dict[str, Any]]) -> None:
    """A misspelt MNEMO_* variable would be ignored silently: each one is in the settings reference."""
    known = set(re.findall(r"MNEMO_[A-Z0-9_]+", (ROOT / "docs" / "settings.md").read_text()))
    for name, deployment in by_kind(production_objects, "Deployment").items():
        env = {e["name"] for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert {e for e in env if e.startswith("MNEMO_")} <= known, (name, sorted(env - known))


def test_an_external_nats_cluster_is_named_or_refused() -> None:
    with pytest.raises(RuntimeError, match=r"externalNats\.(url|monitoringEndpoint) is required"):
        render(sets=["nats.enabled=false"])
    endpoint = "nats-0.nats.messaging.svc.cluster.local:8222"
    objects = render(
        sets=[
            "nats.enabled=false",
            "externalNats.url=nats://nats.messaging:4222",
            f"externalNats.monitoringEndpoint={endpoint}",
        ]
    )
    assert "mnemo-nats" not in by_kind(objects, "NetworkPolicy")  # not ours to police
    ingest = by_kind(objects, "ScaledObject")["mnemo-ingest"]["spec"]["triggers"][0]["metadata"]
    assert ingest["natsServerMonitoringEndpoint"] == endpoint
    env = {
        e["name"]: e.get("value")
        for e in by_kind(objects, "Deployment")["mnemo-ingest"]["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["MNEMO_NATS_URL"] == "nats://nats.messaging:4222"


def test_the_dashboard_is_well_formed() -> None:
    dashboard = json.loads((CHART / "files" / "dashboards" / "mnemo.json").read_text())
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    assert [v["name"] for v in dashboard["templating"]["list"]] == ["datasource"]
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]
        area = {(x, y) for x in range(pos["x"], pos["x"] + pos["w"]) for y in range(pos["y"], pos["y"] + pos["h"])}
        assert not area & cells, f"{panel['title']} overlaps another panel"
        cells |= area
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] == "${datasource}"

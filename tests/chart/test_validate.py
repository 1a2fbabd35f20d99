"""The rendered Kubernetes objects against Kubernetes's own schemas (``kubernetes-validate --strict``: an unknown
field fails), with the default values and the production example."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chart.helm import KUBE_VERSION

CUSTOM_GROUPS = ("keda.sh/", "monitoring.coreos.com/")
VALIDATE = Path(sys.executable).with_name("kubernetes-validate")


def _validate(objects: list[dict[str, Any]], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    core = [o for o in objects if not o["apiVersion"].startswith(CUSTOM_GROUPS)]
    manifest = tmp_path / "core.yaml"
    manifest.write_text(yaml.safe_dump_all(core))
    argv = [str(VALIDATE), "--strict", "--quiet", "--kubernetes-version", KUBE_VERSION, str(manifest)]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("which", ["default_objects", "production_objects"])
def test_kubernetes_objects_validate_strictly(which: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    objects: list[dict[str, Any]] = request.getfixturevalue(which)
    done = _validate(objects, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    kinds = {o["kind"] for o in objects}
    assert {"Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy", "ConfigMap"} <= kinds


def test_the_validator_rejects_an_unknown_field(default_objects: list[dict[str, Any]], tmp_path: Path) -> None:
    """The check above can fail: a misspelt field of a pod spec is refused."""
    broken = [dict(o) for o in default_objects if o["kind"] == "Deployment"][:1]
    broken[0] = yaml.safe_load(yaml.safe_dump(broken[0]))
    broken[0]["spec"]["template"]["spec"]["terminationGracePeriod"] = 45
    done = _validate(broken, tmp_path)
    assert done.returncode != 0
    assert "terminationGracePeriod" in done.stdout + done.stderr

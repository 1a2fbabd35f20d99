"""The KEDA and prometheus-operator objects the chart renders with the default values and the production example,
checked by check-jsonschema against their CRDs' schemas (tests/chart/crd_schemas.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.chart.crd_schemas import MODELS, write_schema

CHECK = Path(sys.executable).with_name("check-jsonschema")


def _check(
    objects: list[dict[str, Any]], api_version: str, kind: str, tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    schema = write_schema(api_version, kind, tmp_path)
    files = []
    for i, obj in enumerate(objects):
        files.append(tmp_path / f"{kind.lower()}-{i}.json")
        files[-1].write_text(json.dumps(obj))
    # The CRDs carry Go regular expressions (inline flags such as "(?i)"): Python's engine reads them.
    argv = [str(CHECK), "--regex-variant", "python", "--schemafile", str(schema), *map(str, files)]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


@pytest.mark.parametrize(("api_version", "kind"), list(MODELS))
def test_custom_resources_match_their_crds(
    api_version: str,
    kind: str,
    default_objects: list[dict[str, Any]],
    production_objects: list[dict[str, Any]],
    tmp_path: Path,
) -> None:
    objects = [
        o for o in (*default_objects, *production_objects) if (o["apiVersion"], o["kind"]) == (api_version, kind)
    ]
    assert objects, f"the chart renders no {kind}"
    done = _check(objects, api_version, kind, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_misspelt_field_is_refused(default_objects: list[dict[str, Any]], tmp_path: Path) -> None:
    scaled = next(o for o in default_objects if o["kind"] == "ScaledObject")
    broken = json.loads(json.dumps(scaled))
    broken["spec"]["minReplicas"] = broken["spec"].pop("minReplicaCount")
    done = _check([broken], "keda.sh/v1alpha1", "ScaledObject", tmp_path)
    assert done.returncode != 0
    assert "minReplicas" in done.stdout + done.stderr

"""JSON schemas of the custom resources the chart renders (KEDA's ScaledObject, prometheus-operator's
ServiceMonitor and PrometheusRule), for check-jsonschema.

The CRDs themselves are not published in a package registry this build installs from; cloudcoil publishes
pydantic models generated from them on PyPI (``cloudcoil.models.keda`` 2.16.1.0, from KEDA 2.16.1's CRDs, and
``cloudcoil.models.prometheus-operator`` 0.80.1.0), pinned in pyproject.toml. Their JSON schema is the CRD's
structure and types; every object with declared properties is closed (``additionalProperties: false``), as the
API server's strict field validation refuses an unknown field, so a misspelt key fails here too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cloudcoil.models.keda import v1alpha1 as keda
from cloudcoil.models.prometheus_operator import v1 as monitoring
from pydantic import BaseModel

#: (apiVersion, kind) -> the model generated from that CRD.
MODELS: dict[tuple[str, str], type[BaseModel]] = {
    ("keda.sh/v1alpha1", "ScaledObject"): keda.ScaledObject,
    ("monitoring.coreos.com/v1", "ServiceMonitor"): monitoring.ServiceMonitor,
    ("monitoring.coreos.com/v1", "PrometheusRule"): monitoring.PrometheusRule,
}


def closed(node: Any) -> Any:
    """``node`` with every object schema that declares properties refusing others, and the CRDs' Go regular
    expressions readable by Python's engine (Go takes an inline flag anywhere: ``^(?i)(abort|warn)?$``)."""
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        pattern = node.get("pattern")
        if isinstance(pattern, str) and "(?i)" in pattern[1:]:
            node["pattern"] = "(?i)" + pattern.replace("(?i)", "")
        for value in node.values():
            closed(value)
    elif isinstance(node, list):
        for value in node:
            closed(value)
    return node


def schema(api_version: str, kind: str) -> dict[str, Any]:
    model = MODELS[(api_version, kind)]
    generated: dict[str, Any] = closed(model.model_json_schema(by_alias=True, mode="validation"))
    generated["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return generated


def write_schema(api_version: str, kind: str, directory: Path) -> Path:
    path = directory / f"{kind.lower()}.schema.json"
    path.write_text(json.dumps(schema(api_version, kind)))
    return path

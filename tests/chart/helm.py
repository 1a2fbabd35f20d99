"""The chart rendered offline, as the chart tests and ``make chart`` see it.

``helm`` and ``promtool`` come from ``deploy/helm/install-tools.sh`` (``make install``), under ``.venv/tools/bin``.
The official NATS chart, a dependency, reaches ``charts/`` only through ``helm dependency build``, which needs its
Helm repository on the network. Without it the chart is rendered from a copy whose Chart.yaml leaves the
dependency out: every object of mnemo's own is rendered and checked; the NATS objects are the official chart's.
Once ``charts/nats-*.tgz`` is there, the chart is rendered whole.

``python -m tests.chart.helm [helm template flags]`` prints the manifests (``make chart``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "mnemo"
PRODUCTION_VALUES = ROOT / "deploy" / "helm" / "values-production.yaml"
TOOLS = ROOT / ".venv" / "tools" / "bin"
RELEASE, NAMESPACE = "mnemo", "mnemo"
#: Kubernetes version the manifests are rendered and validated for (kubernetes-validate knows it).
KUBE_VERSION = "1.34.0"


def tool(name: str) -> Path | None:
    """The installed tool, or None (then ``make install`` did not run, or could not install it)."""
    for candidate in (TOOLS / name, shutil.which(name)):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def helm_binary() -> Path:
    found = tool("helm")
    if found is None:
        raise FileNotFoundError(f"no helm under {TOOLS}: run `make install` (deploy/helm/install-tools.sh)")
    return found


def has_nats_dependency() -> bool:
    return any((CHART / "charts").glob("nats-*.tgz"))


@contextmanager
def offline_chart() -> Iterator[Path]:
    """A directory ``helm`` can render without the network (see the module's docstring)."""
    if has_nats_dependency():
        yield CHART
        return
    with tempfile.TemporaryDirectory(prefix="mnemo-chart-") as tmp:
        copy = Path(tmp) / CHART.name
        shutil.copytree(CHART, copy, ignore=shutil.ignore_patterns("charts"))
        meta = yaml.safe_load((copy / "Chart.yaml").read_text())
        meta.pop("dependencies", None)
        (copy / "Chart.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
        yield copy


def helm(*args: str, chart: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(helm_binary()), *args], capture_output=True, text=True, check=False, cwd=chart)


def template_args(values: Sequence[Path] = (), sets: Sequence[str] = ()) -> list[str]:
    args = ["--namespace", NAMESPACE, "--kube-version", KUBE_VERSION]
    for file in values:
        args += ["--values", str(file)]
    for item in sets:
        args += ["--set", item]
    return args


def render_text(values: Sequence[Path] = (), sets: Sequence[str] = ()) -> str:
    with offline_chart() as chart:
        done = helm("template", RELEASE, str(chart), *template_args(values, sets))
    if done.returncode:
        raise RuntimeError(f"helm template failed:\n{done.stderr}")
    return done.stdout


def render(values: Sequence[Path] = (), sets: Sequence[str] = ()) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(render_text(values, sets)) if doc]


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def main(argv: list[str]) -> int:
    with offline_chart() as chart:
        done = helm("template", RELEASE, str(chart), "--namespace", NAMESPACE, *argv)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

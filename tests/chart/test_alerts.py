"""The alert rules (deploy/helm/mnemo/files/alerts.yaml) checked and unit-tested by promtool, Prometheus's own tool
(from Debian's prometheus package, installed by deploy/helm/install-tools.sh)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.chart.helm import CHART, ROOT, tool

RULES = CHART / "files" / "alerts.yaml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "alerts-test.yaml"


def _promtool() -> Path:
    found = tool("promtool")
    if found is None:
        pytest.skip(
            "promtool is not installed: Debian's prometheus package could not be downloaded here "
            "(make install runs deploy/helm/install-tools.sh)"
        )
    return found


def test_the_rules_are_valid() -> None:
    done = subprocess.run([str(_promtool()), "check", "rules", str(RULES)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_the_rules_unit_tests_pass() -> None:
    done = subprocess.run([str(_promtool()), "test", "rules", str(RULE_TESTS)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_compose_prometheus_config_is_valid(tmp_path: Path) -> None:
    """docker-compose.yml's Prometheus configuration with the rules mounted beside it."""
    shutil.copy(ROOT / "deploy" / "prometheus" / "prometheus.yml", tmp_path / "prometheus.yml")
    shutil.copy(RULES, tmp_path / "alerts.yaml")
    argv = [str(_promtool()), "check", "config", str(tmp_path / "prometheus.yml")]
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr

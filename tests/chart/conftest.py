from __future__ import annotations

from typing import Any

import pytest

from tests.chart.helm import PRODUCTION_VALUES, render


@pytest.fixture(scope="session")
def default_objects() -> list[dict[str, Any]]:
    return render()


@pytest.fixture(scope="session")
def production_objects() -> list[dict[str, Any]]:
    return render([PRODUCTION_VALUES])

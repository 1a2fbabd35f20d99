from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.stackproc import StackProcess


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackProcess]:
    """One embedded stack per test module, started as its own process."""
    proc = StackProcess(Path(tmp_path_factory.mktemp("stack")))
    proc.start()
    yield proc
    code = proc.stop()
    assert code == 0, f"stack exited with {code}:\n{proc.log_tail()}"

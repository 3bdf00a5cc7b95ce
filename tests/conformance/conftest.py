"""The ``backend`` fixture: every conformance case runs on the file and the memory store."""

from __future__ import annotations

from pathlib import Path

import pytest
from backends import BACKENDS, Backend


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return BACKENDS[request.param](tmp_path)

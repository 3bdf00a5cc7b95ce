"""The torture suite's shared setup: no warm host outlives its test.

The memory harness runs on warm hosts, which are detached from the process that launched
them (they outlive it on purpose: that is what keeps a harness's memory across a crash)
and wait an hour for a caller. A torture test kills hundreds of writers and its checks
start more; at its end every host of every home the test made is ended through the
runtime's own ``shutdown_all``, so none stays behind on the machine.

The torture model is registered in the process's model registry while a test runs and
unregistered after it, so a later test on the same worker sees the providers it expects.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentsessions.models import MODELS
from agentsessions.runtimes.warm_launch import shutdown_all
from tests.torture.agent import MODEL


@pytest.fixture(autouse=True)
def _end_warm_hosts(tmp_path: Path) -> Iterator[None]:
    yield
    for sessions in tmp_path.rglob("sessions"):  # each home under the test's directory
        if (sessions.parent / "run").is_dir():
            shutdown_all(sessions.parent)


@pytest.fixture(autouse=True)
def _unregister_the_torture_model() -> Iterator[None]:
    yield
    if MODEL in MODELS.names():
        MODELS.unregister(MODEL)

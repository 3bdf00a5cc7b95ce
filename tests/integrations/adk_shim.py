"""A pytest plugin for ADK's own ``test_session_service.py``: every service it makes is ours.

Loaded with ``-p adk_shim`` by ``test_adk_upstream_suite.py`` into a pytest run of ADK's
file. The file makes its services through its module-level ``get_session_service(type)``
(ADK's in-memory or database service); an autouse fixture puts a maker of our
``AgentSessionsService`` in its place, for every type the file parametrises. Each service
gets a fresh home, or the store ``AGENTSESSIONS_STORE`` names (a project of its own there),
encrypted when ``AGENTSESSIONS_KEY_FILE`` is set.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from typing import Any

import pytest

from agentsessions.integrations.adk import AgentSessionsService

MADE = [0]  # how many services the run made: proof ADK's tests used ours


def _make(service_type: Any = None) -> AgentSessionsService:
    MADE[0] += 1
    where = os.environ.get("AGENTSESSIONS_STORE") or tempfile.mkdtemp(prefix="adk-home-")
    key_file = os.environ.get("AGENTSESSIONS_KEY_FILE") or None
    return AgentSessionsService(where, project=f"adk-{uuid.uuid4().hex[:8]}", key_file=key_file)


@pytest.fixture(autouse=True)
def _our_service(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if hasattr(request.module, "get_session_service"):
        monkeypatch.setattr(request.module, "get_session_service", _make)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say how many of our services the run made (the calling test checks it is not 0)."""
    terminalreporter.write_line(f"agentsessions-shim: {MADE[0]} services")

"""A pytest plugin for the OpenAI Agents SDK's own test suite: ``SQLiteSession`` is ours.

Loaded with ``-p openai_agents_shim`` by ``test_openai_agents_sdk_suite.py`` into a pytest run
of the SDK's source distribution's tests. A plugin given with ``-p`` is imported before any
test module, so the SDK's ``from agents import SQLiteSession`` finds the substitute.

The substitute keeps the SDK's constructor (``session_id, db_path=":memory:", ...``): each
``:memory:`` instance gets a home of its own (a fresh in-memory database shares nothing),
a file ``db_path`` the home ``<db_path>.agentsessions`` (two instances on one path share one
history, as two SQLiteSessions on one file do). The store and the master key come from the
environment as for any engine (``AGENTSESSIONS_STORE``, ``AGENTSESSIONS_KEY_FILE``); on a
shared store (JetStream) each database path is its own project, so tests stay apart.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import agents
import agents.memory

from agentsessions.integrations.openai_agents import AgentSessionsSession

MADE = [0]  # how many substitutes the run made: proof the SDK's tests used ours


class SQLiteSession(AgentSessionsSession):
    """:class:`AgentSessionsSession` behind ``SQLiteSession``'s constructor."""

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: Any = None,
    ) -> None:
        if str(db_path) == ":memory:":
            home = tempfile.mkdtemp(prefix="oa-memory-")
        else:
            home = os.fspath(db_path) + ".agentsessions"
        self.db_path = db_path
        MADE[0] += 1
        project = "oa-" + hashlib.sha256(f"{home}\0{sessions_table}".encode()).hexdigest()[:16]
        super().__init__(session_id, home, project=project, session_settings=session_settings)


agents.SQLiteSession = SQLiteSession  # type: ignore[misc]
agents.memory.SQLiteSession = SQLiteSession  # type: ignore[misc]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say how many of our sessions the run made (the calling test checks it is not 0)."""
    terminalreporter.write_line(f"agentsessions-shim: {MADE[0]} sessions")

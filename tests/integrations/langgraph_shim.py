"""A pytest plugin for LangGraph's own test suites: every checkpointer is ours.

Loaded with ``-p langgraph_shim`` by ``test_langgraph_suites.py`` into a pytest run of the
``langgraph-checkpoint`` or ``langgraph`` source distribution's tests (their own conftest
left out with ``--noconftest``: it opens SQLite, Postgres and Redis savers). A plugin given
with ``-p`` is imported before any test module, so ``from langgraph.checkpoint.memory
import InMemorySaver`` finds the substitute, and the fixtures below stand in for the ones
their conftest defines (``sync_checkpointer``, ``async_checkpointer``, ``durability``: sync,
async, exit; and the in-memory cache and store the same tests ask for).

Every saver of the run shares one engine (a home under ``TMPDIR``; the store and the master
key come from the environment as for any engine: ``AGENTSESSIONS_STORE``,
``AGENTSESSIONS_KEY_FILE``) and gets a project of its own, so a fresh saver sees no thread
of another, as a fresh ``InMemorySaver`` does.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import langgraph.checkpoint.memory
import pytest

from agentsessions.integrations.langgraph import AgentSessionsSaver
from agentsessions.sessions.api import Sessions

MADE = [0]  # how many savers the run made: proof the tests used ours
_ENGINE: list[Sessions] = []


def _engine() -> Sessions:
    if not _ENGINE:
        from agentsessions.sessions.local import open_local

        _ENGINE.append(open_local(tempfile.mkdtemp(prefix="lg-home-")))
    return _ENGINE[0]


class InMemorySaver(AgentSessionsSaver):
    """:class:`AgentSessionsSaver` behind ``InMemorySaver``'s constructor."""

    def __init__(self, *, serde: Any = None, factory: Any = None) -> None:
        MADE[0] += 1
        super().__init__(_engine(), project=f"lg-{uuid.uuid4().hex[:12]}", serde=serde)


langgraph.checkpoint.memory.InMemorySaver = InMemorySaver  # type: ignore[misc]
langgraph.checkpoint.memory.MemorySaver = InMemorySaver  # type: ignore[misc]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["sync", "async", "exit"])
def durability(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# The one parameter's id is "memory": LangGraph's graph-drawing snapshots (syrupy) are
# recorded under their in-memory checkpointer's id, and what they draw does not depend on
# the saver; the saver behind it is ours.
@pytest.fixture(params=["memory"])
def sync_checkpointer() -> Iterator[AgentSessionsSaver]:
    with InMemorySaver() as saver:
        yield saver


@pytest.fixture(params=["memory"])
async def async_checkpointer() -> AsyncIterator[AgentSessionsSaver]:
    async with InMemorySaver() as saver:
        yield saver


@pytest.fixture
def cache() -> Any:
    from langgraph.cache.memory import InMemoryCache

    return InMemoryCache()


@pytest.fixture
def sync_store() -> Any:
    from langgraph.store.memory import InMemoryStore

    return InMemoryStore()


@pytest.fixture
def async_store() -> Any:
    from langgraph.store.memory import InMemoryStore

    return InMemoryStore()


@pytest.fixture
def deterministic_uuids(mocker: Any) -> Any:
    side_effect = (uuid.UUID(f"00000000-0000-4000-8000-{i:012}", version=4) for i in range(10000))
    return mocker.patch("uuid.uuid4", side_effect=side_effect)


def pytest_unconfigure(config: pytest.Config) -> None:
    for engine in _ENGINE:
        engine.close()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say how many of our savers the run made (the calling test checks it is not 0)."""
    terminalreporter.write_line(f"agentsessions-shim: {MADE[0]} savers")

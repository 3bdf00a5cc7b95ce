"""ListSessions.not_listed: the sessions a server's store could not index reach the
operator (a listener without auth), never a project-scoped token's principal, whose
projects cannot be checked against a session whose project is unknown."""

from __future__ import annotations

from typing import Any

from agentsessions.errors import MetadataCorruptError
from agentsessions.server.scoped import Scope
from agentsessions.sessions.tokens import Principal


class Engine:
    """Only what the scope reads here: the store's unindexed sessions."""

    def __init__(self) -> None:
        self.unindexed = [MetadataCorruptError("session sess-x: damaged metadata")]


def _scoped(principal: Principal) -> Any:
    return Scope(Engine(), lambda: principal)()  # type: ignore[arg-type]


def test_the_operator_sees_what_was_not_indexed() -> None:
    operator = _scoped(Principal(name="", projects=None))
    assert [e.message for e in operator.unindexed] == ["session sess-x: damaged metadata"]


def test_a_scoped_principal_sees_nothing_of_unknown_projects() -> None:
    alice = _scoped(Principal(name="alice", projects=frozenset({"acme"}), primary="acme"))
    assert alice.unindexed == []

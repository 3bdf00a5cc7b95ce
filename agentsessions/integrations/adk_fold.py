"""An ADK scope's journal as read so far (:class:`Fold`), folded incrementally.

The ADK adapter (:mod:`.adk`) keeps one fold per agentsessions session it reads: the records
up to ``seq`` folded onto ``state`` (the harness's ``{"n", "state"}``), the ADK events as
JSON and, once validated, as ADK models, and what it must still share with its app and user
scopes. Reading folds only the records after ``seq``, so a read costs what is new, not
what the session holds.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.adk.events.event import Event
from google.adk.sessions.state import State

from . import adk_harness

if TYPE_CHECKING:
    from agentsessions.sessions.api import Sessions

MARK = "agentsessions:"
"""The prefix of a session object's revision marker (``MARK`` + uid + ``:`` + write count)."""


@dataclass
class Fold:
    """One scope as read so far: the journal up to ``seq`` folded onto ``state``."""

    uid: str
    seq: int = 0
    state: dict[str, Any] = field(default_factory=adk_harness.empty)
    events: list[dict[str, Any]] = field(default_factory=list)  # an ADK session's, as JSON
    models: list[Event] = field(default_factory=list)  # events[:len(models)], validated once
    updated: float = 0.0  # ADK's last_update_time: the last event's timestamp
    pending: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # by execution
    shared: tuple[int, dict[str, Any]] | None = None  # an ADK session's last app/user delta
    applied: dict[str, int] = field(default_factory=dict)  # a scope's: source uid -> its n
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)
    """Held while the fold is read or changed, and around a write to its session."""

    @property
    def marker(self) -> str:
        return f"{MARK}{self.uid}:{self.state['n']}"

    def read(self, engine: Sessions) -> None:
        """Fold the records after ``seq`` (the caller holds ``lock``): an execution's
        writes take effect only once it ENDs ``COMPLETED``."""
        for record in engine.read(self.uid, from_seq=self.seq + 1):
            event, self.seq = record.event, record.seq
            kind, execution = event.get("kind"), str(event.get("execution_id", ""))
            if kind == "EVENT_INPUT":
                found = adk_harness.bodies(event.get("message") or {})
                self.pending.setdefault(execution, []).extend(found)
            elif kind == "EVENT_END":
                done = self.pending.pop(execution, [])
                if (event.get("end") or {}).get("state") == "COMPLETED":
                    for body in done:
                        self.take(body)

    def take(self, body: dict[str, Any]) -> None:
        """Apply one completed write (an event, a create, a scope's delta) to the fold."""
        adk_harness.apply(self.state, body)
        if "event" in body:
            self.events.append(body["event"])
            self.updated = float(body["event"].get("timestamp", self.updated))
            if scope_keys(delta_of(body["event"])):
                self.shared = (self.state["n"], delta_of(body["event"]))
        elif "create" in body:
            self.updated = float(body.get("time", 0.0))
            if body.get("shared"):
                self.shared = (0, dict(body["shared"]))
        elif "delta" in body and "from" in body:
            source, n = str(body["from"]), int(body.get("n", 0))
            self.applied[source] = max(self.applied.get(source, -1), n)


def delta_of(record: Mapping[str, Any]) -> dict[str, Any]:
    return dict((record.get("actions") or {}).get("state_delta") or {})


def scope_keys(state: Mapping[str, Any]) -> dict[str, Any]:
    """The ``app:`` and ``user:`` keys of ``state``."""
    return {k: v for k, v in state.items() if k.startswith((State.APP_PREFIX, State.USER_PREFIX))}

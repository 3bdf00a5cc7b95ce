"""The ``adk`` harness: records an ADK session's writes and commits its folded state.

The Google ADK adapter (:mod:`.adk`) writes each ``create_session``, ``append_event`` and
app- or user-state update as one turn of this harness. Its inputs are the records (one INPUT
each, a ``user`` message with one DataPart ``{"adk": BODY}``); it calls no model and no tool.
What it adds to the ``openai-agents`` recording harness is the working state: every turn
commits the scope's state after the turn (``sink.state``), so the state an ADK session holds
is committed with the event that set it, in the same turn, and ``agentsessions get`` shows it.

The working state is compact JSON ``{"n": N, "state": {...}}``: ``state`` is the scope's
keys (no ``app:``/``user:``/``temp:`` prefix for a session, the un-prefixed keys for an app
or user scope) and ``n`` the number of writes applied. A BODY is one of:

- ``{"create": STATE}``: the first turn of an ADK session (``n`` 0, ``state`` STATE);
- ``{"event": EVENT, "expect": N}``: an ADK event (its JSON); applies the event's
  session-scoped ``actions.state_delta`` and counts it, only if ``n`` is still N when the
  turn runs (the engine runs one turn of a session at a time, so this is the stale-session
  check made where no other writer can slip in: a stale write fails its turn, ERROR
  recorded, and never takes effect);
- ``{"delta": DELTA, "from": UID, "n": N}``: an app or user scope's update (DELTA's keys are
  un-prefixed) made by the write N of ADK session UID.

:func:`apply` is the one fold of a BODY onto a state: the harness commits what it returns,
and the adapter folds the journal with it, so the two cannot disagree. A turn takes effect
only when its execution ENDs COMPLETED (the adapter folds no other). The module imports no
ADK, so the CLI (``replay --rerun``) finds the harness without the framework.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from agentsessions.controller.spi import (
    STATELESS_REPLAY,
    Capabilities,
    HarnessDescriptor,
    Sink,
    Start,
)

NAME = "adk"
KEY = "adk"
"""The DataPart key of every INPUT the adapter writes."""
PREFIXES = ("app:", "user:", "temp:")
"""ADK's state key prefixes: a key with none of them is session-scoped."""
DESCRIPTOR = HarnessDescriptor(
    id=NAME,
    version="1",
    capabilities=Capabilities(
        resumability=STATELESS_REPLAY, working_state=True, uses_session_model=False
    ),
)


class StaleWriteError(RuntimeError):
    """An event written against a state that another write has moved on from."""


def empty() -> dict[str, Any]:
    """The state of a scope nothing has been written to."""
    return {"n": 0, "state": {}}


def session_delta(event: Mapping[str, Any]) -> dict[str, Any]:
    """The session-scoped keys of an event's (JSON) ``actions.state_delta``."""
    delta = (event.get("actions") or {}).get("state_delta") or {}
    return {k: v for k, v in delta.items() if not k.startswith(PREFIXES)}


def apply(state: dict[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """``state`` after ``body`` (``state`` is updated in place and returned).

    Raises :class:`StaleWriteError` for an event whose ``expect`` is not the state's count.
    """
    if "create" in body:
        state["n"], state["state"] = 0, dict(body["create"])
    elif "event" in body:
        expect = body.get("expect")
        if expect is not None and expect != state["n"]:
            raise StaleWriteError(
                f"stale session: written against write {expect}, but the session is at "
                f"write {state['n']} (another writer came first; get the session again)"
            )
        state["state"].update(session_delta(body["event"]))
        state["n"] += 1
    elif "delta" in body:
        state["state"].update(body["delta"])
        state["n"] += 1
    return state


def bodies(message: Mapping[str, Any]) -> Iterable[dict[str, Any]]:
    """The adapter's BODYs in one INPUT message (none in anyone else's)."""
    for part in message.get("parts", ()):
        body = ((part.get("data") or {}).get("data") or {}).get(KEY)
        if isinstance(body, dict):
            yield body


class AdkHarness:
    """Records the turn's inputs (the engine does) and commits the scope's folded state."""

    def describe(self) -> HarnessDescriptor:
        """The ``adk`` harness's descriptor (STATELESS_REPLAY, working state, no model)."""
        return DESCRIPTOR

    def run(self, start: Start, sink: Sink) -> None:
        """Fold the inputs onto the state this turn starts from, then commit it."""
        state = json.loads(start.state.data) if start.state.version else empty()
        for message in start.inputs:
            for body in bodies(message):
                apply(state, body)
        data = json.dumps(state, separators=(",", ":"), sort_keys=True).encode()
        sink.state(data, expected_version=start.state.version)


def create() -> AdkHarness:
    """A new ``adk`` harness (the registry's factory)."""
    return AdkHarness()

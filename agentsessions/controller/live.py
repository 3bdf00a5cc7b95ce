"""The live side of a turn's sink: the journal it appends to, the models it calls, and the
caller's observers isolated from the turn they watch.

:class:`~.sinks.TurnSink` serves a turn's effects from the record while one remains and
from :class:`Live` past its end; replay has no Live side at all. What the controller hands
a turn (:class:`Live`, :func:`isolated` callbacks) is defined here, apart from the replay
rules in :mod:`.sinks`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from agentsessions.journal.format.records import Record
from agentsessions.valueclass import field, value

from . import cancel
from .deltas import DeltaSink
from .spi import ModelProvider
from .toolcalls import ToolHost

Event = dict[str, Any]


class Journal(Protocol):
    """Where a live sink appends: one commit per call, acknowledged after its sync."""

    def record(self, events: Sequence[Mapping[str, Any]], *, sync: bool = True) -> Record:
        """Commit ``events``; with ``sync=False`` the next sync (or :meth:`flush`) covers it."""
        ...

    def defer(self, events: Sequence[Mapping[str, Any]]) -> None:
        """Commit ``events`` with the next sync (landed now unsynced, or, in ``turn`` mode,
        held and landed with the next synced commit as one)."""
        ...

    def flush(self) -> None:
        """Make every commit recorded with ``sync=False`` durable."""
        ...

    def before_call(self) -> None:
        """Before a model call: make what it is sent durable if the turn's durability mode
        asks (``step``: yes; ``turn``: no, END's sync covers it)."""
        ...

    def commit_state(
        self,
        data: bytes,
        *,
        covers_to: int,
        expected_version: int | None,
        commit_id: str,
        author: str,
    ) -> int:
        """Commit the working state (no entries) after everything recorded so far, waiting
        for the next sync as a ``sync=False`` commit does; the new state version."""
        ...


class Observer(DeltaSink):
    """A caller's callback (``on_record``, ``on_delta``) isolated from the turn it watches.

    Watching a turn must never change it: a terminal that went away (a broken pipe, a full
    disk) is the caller's problem, not the model's or the harness's, so an exception raised
    by the callback is kept in ``errors`` (for the caller to inspect) instead of being
    journaled as the turn's failure. After its first failure the callback is not called
    again. ``BaseException`` (Ctrl-C, SystemExit) still propagates: that is the user stopping
    the process, and the open turn is left for resume.
    """

    def __init__(self, callback: Callable[[Any], None], errors: list[Exception]) -> None:
        self.callback = callback
        self.errors = errors
        self.broken = False

    def __call__(self, value: Any) -> None:
        if self.broken:
            return
        try:
            self.callback(value)
        except Exception as exc:
            self.broken = True
            self.errors.append(exc)

    def checked(self, check: Callable[[], None], every: float) -> Callable[[Any], None]:
        """``check`` at most once per ``every`` seconds, then the isolated callback."""
        callback, clock, last = self.callback, time.monotonic, time.monotonic()

        def deliver(value: Any) -> None:
            nonlocal last
            now = clock()
            if now - last >= every:
                last = now
                check()
            if self.broken:
                return
            try:
                callback(value)
            except Exception as exc:  # isolated as by __call__
                self.broken = True
                self.errors.append(exc)

        return deliver


def isolated(
    callback: Callable[[Any], None] | None, errors: list[Exception]
) -> Callable[[Any], None] | None:
    """``callback`` behind an :class:`Observer`; a :class:`DeltaSink` (an Observer among
    them) as it is: it never raises from a delta."""
    if callback is None or isinstance(callback, DeltaSink):
        return callback
    return Observer(callback, errors)


@value
class Live:
    """The live side of a sink: the journal to append to and the models to call."""

    journal: Journal
    models: Callable[[str], ModelProvider]
    default_model: str
    on_delta: Callable[[str], None] | None = None
    calls: list[str] = field(default_factory=list)  # live model calls made (I1 evidence)
    tools: ToolHost | None = None
    """The session's tools and receipts (None: this turn runs no mediated tools)."""
    before_effect: Callable[[], None] | None = None
    """Asked before each live effect starts (model call, output, tool result, usage) and as
    a live model call streams; it raises TurnCanceledError when a cancel request names the
    turn's execution (a streaming call is then abandoned, its MODEL_CALL kept as audit)."""
    approvals: bool = False
    """The harness may make approval-gated calls (it is STATELESS_REPLAY: a parked turn is
    continued by replaying it); False refuses them before anything is recorded."""
    author: str = ""
    """Who the host stamps on the harness's working state (``harness:<id>``)."""

    def boundary(self) -> None:
        """An effect boundary: stop here if the turn was canceled."""
        if self.before_effect is not None:
            self.before_effect()

    def streaming(self) -> Callable[[str], None] | None:
        """``on_delta`` asking ``before_effect`` as the answer streams (a cancel abandons it)."""
        if self.on_delta is None or self.before_effect is None:
            return self.on_delta
        if isinstance(self.on_delta, DeltaSink):  # the controller's: one call per delta
            return self.on_delta.checked(self.before_effect, cancel.STREAM_CHECK_SECONDS)
        return cancel.checked_stream(self.on_delta, self.before_effect)

"""Replay: re-drive the recorded executions against the harness with zero model calls.

Read-only. Every recorded effect is served from the journal by the same
:class:`~agentsessions.controller.sinks.TurnSink` a live turn uses, with no live side, so
a replay that asks for anything unrecorded fails instead of calling a model (I1). Each
model request must hash like the recorded one (I0) and each execution must consume its
recorded effects exactly (I5). Harness name and version are checked for every execution
before anything runs. The result names the first divergence instead of raising, so a
user sees how far the replay got.

Each execution gets the history the live turn got (the events before its first one). A
stateless harness runs each execution on a fresh instance; a memory harness
(REQUIRES_MEMORY_SNAPSHOT) runs them all, in journal order, on ONE instance, as its live
compute did (I4: it never rebuilds memory from history, so that is the only way to reach
the memory a later execution started from), starting over empty at each recorded fresh
start (:mod:`.freshstart`). Failed executions (ERROR, no END) are audit and not replayed; a
memory harness that changed its memory in one before failing is not reproducible from the
journal alone.

Each execution also gets the working state its live run started with (``Start.state``: the
latest state committed before its first seq, found by stepping back over state records, see
``journal/stores/statefile.py``), and its ``sink.state`` commits write nothing and return the
versions the live run got, so a harness that keeps its state there replays as it ran.

Memory stays flat in the session's length: the journal is streamed twice (once to check
every execution's harness before anything runs, once to replay), one execution is held at a
time, and each execution's history is lazy: its recent events from a bounded window of the
stream (:class:`WindowHistory`), anything older from the store. A v0.1.2 (ID-less) journal
needs the whole log for its rules (:func:`executions.replayable`) and is replayed from a
list, as before.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agentsessions.errors import (
    AgentSessionsError,
    InvalidArgumentError,
    ReplayDivergedError,
    ReplayError,
)
from agentsessions.journal.stores.store import SessionInfo, Store, WorkingState

from . import executions
from .freshstart import ReplayInstances, is_marker
from .history import ListHistory, StoreHistory
from .registry import Registry
from .rules import check_harness
from .sinks import TurnSink
from .spi import Harness, Start, ToolOffer, ToolSpec


@dataclass
class ReplayResult:
    """What a replay reproduced: executions, outputs, model calls (must be 0), divergence."""

    uid: str
    harness: str
    executions: int = 0
    replayed: int = 0
    model_calls: int = 0
    outputs: list[str] = field(default_factory=list)
    """The replayed outputs in order; only the last :data:`OUTPUTS_KEPT` of a long session
    (memory stays flat), ``outputs_total`` counts them all."""
    divergence: str = ""
    diverged_execution: str = ""
    head_before: tuple[int, str] = (0, "")
    head_after: tuple[int, str] = (0, "")
    outputs_total: int = 0

    def add_outputs(self, outputs: list[str]) -> None:
        """Count ``outputs`` and keep the most recent :data:`OUTPUTS_KEPT` of all seen."""
        self.outputs += outputs
        self.outputs_total += len(outputs)
        if len(self.outputs) > 2 * OUTPUTS_KEPT:
            del self.outputs[:-OUTPUTS_KEPT]

    def trim(self) -> None:
        """Keep only the last :data:`OUTPUTS_KEPT` outputs (called when the replay ends)."""
        del self.outputs[:-OUTPUTS_KEPT]

    @property
    def identical(self) -> bool:
        """Every execution reproduced its record exactly and the journal is untouched."""
        return (
            not self.divergence
            and self.model_calls == 0
            and self.replayed == self.executions
            and self.head_before == self.head_after
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "harness": self.harness,
            "executions": self.executions,
            "replayed": self.replayed,
            "model_calls": self.model_calls,
            "identical": self.identical,
            "outputs": list(self.outputs),
            "outputs_total": self.outputs_total,
            "divergence": self.divergence,
            "diverged_execution": self.diverged_execution,
            "last_seq": self.head_after[0],
        }


def replay(
    store: Store,
    uid: str,
    harnesses: Registry[Harness],
    *,
    harness: str = "",
    model_calls: Callable[[], int] = lambda: 0,
    offers: ToolOffer | None = None,
) -> ReplayResult:
    """Re-drive every completed execution of ``uid``, in order; see the module docstring.

    Always from the session's first execution (a forked child's included: it shares the
    parent's prefix), since a memory harness can only reach execution N through 1..N-1.
    ``offers`` gives each run the session's tools (``Start.tools``) as a live run gets them.
    """
    info = store.get(uid)
    tools = () if offers is None else offers(uid)
    try:
        return _replay_streaming(store, uid, info, harnesses, harness, model_calls, tools)
    except executions.LegacyLogError:
        pass  # a v0.1.2 journal: its rules need the whole log
    events = [(r.seq, r.event) for r in store.read(uid, 1, info.last_seq)]
    runs = executions.replayable(executions.group(events))
    name = harness or info.meta.harness or _recorded_name(runs)
    if not name:
        raise InvalidArgumentError(
            f"session {uid} names no harness; choose one with --harness",
            hint=f"agentsessions replay {uid} --rerun --harness echo",
        )
    descriptor = harnesses.create(name).describe()
    for run in runs:
        check_harness(run, name, descriptor)
    result = ReplayResult(
        uid, name, executions=len(runs), head_before=(info.last_seq, info.last_hash)
    )
    calls_before = model_calls()
    stateful = store.state(uid).version > 0
    ordered = [e for _, e in events]
    # a memory harness replays every execution, in order, on one instance (see the module
    # docstring); a stateless one gets a fresh instance per execution
    instances = ReplayInstances(harnesses, name, descriptor, events)
    for run in runs:
        try:
            instance = instances.for_run(run.first_seq, run.last_seq)
            # v0.1.2: one whole-log run sees the whole log; a modern run sees what came
            # before it (seqs are contiguous from 1: a prefix of the list, not a copy)
            end = None if run.legacy else run.first_seq - 1
            state = _state(store, uid, run.first_seq, stateful)
            history_ = ListHistory(ordered, end)
            result.add_outputs(_replay_one(instance, run, history_, tools, state))
        except ReplayError as exc:
            result.divergence, result.diverged_execution = str(exc), run.id or "legacy"
            break
        except AgentSessionsError as exc:
            result.divergence, result.diverged_execution = f"harness failed: {exc}", run.id
            break
        result.replayed += 1
    result.model_calls = model_calls() - calls_before
    result.trim()
    after = store.get(uid)
    result.head_after = (after.last_seq, after.last_hash)
    return result


def _replay_streaming(
    store: Store,
    uid: str,
    info: SessionInfo,
    harnesses: Registry[Harness],
    harness: str,
    model_calls: Callable[[], int],
    tools: tuple[ToolSpec, ...] = (),
) -> ReplayResult:
    """Replay a journal of contiguous executions holding one at a time (see the module
    docstring); LegacyLogError when it is not one (nothing has run yet then)."""
    last = info.last_seq
    name = harness or info.meta.harness
    checked: set[tuple[str, str]] = set()
    count, descriptor = 0, None
    markers: list[tuple[int, dict[str, Any]]] = []
    for run in executions.stream(_pairs(store, uid, last, markers)):  # pass 1: check
        name = name or run.harness[0]
        if not run.completed:
            continue
        count += 1
        if run.harness not in checked:
            if not name:
                break
            descriptor = descriptor or harnesses.create(name).describe()
            check_harness(run, name, descriptor)
            checked.add(run.harness)
    if not name:
        raise InvalidArgumentError(
            f"session {uid} names no harness; choose one with --harness",
            hint=f"agentsessions replay {uid} --rerun --harness echo",
        )
    descriptor = descriptor or harnesses.create(name).describe()
    result = ReplayResult(uid, name, executions=count, head_before=(last, info.last_hash))
    calls_before = model_calls()
    stateful = store.state(uid).version > 0  # else no execution needs a state lookup
    instances = ReplayInstances(harnesses, name, descriptor, markers)
    window: deque[tuple[int, dict[str, Any]]] = deque(maxlen=WINDOW_EVENTS)
    for run in executions.stream(_pairs(store, uid, last, None, window)):  # pass 2: replay
        if not run.completed:
            continue
        history = WindowHistory(window, run.first_seq - 1, StoreHistory(store, uid, last))
        try:
            instance = instances.for_run(run.first_seq, run.last_seq)
            state = _state(store, uid, run.first_seq, stateful)
            result.add_outputs(_replay_one(instance, run, history, tools, state))
        except ReplayError as exc:
            result.divergence, result.diverged_execution = str(exc), run.id
            break
        except AgentSessionsError as exc:
            result.divergence, result.diverged_execution = f"harness failed: {exc}", run.id
            break
        result.replayed += 1
    result.model_calls = model_calls() - calls_before
    result.trim()
    after = store.get(uid)
    result.head_after = (after.last_seq, after.last_hash)
    return result


OUTPUTS_KEPT = 1000
"""How many replayed outputs a result keeps (the most recent); ``outputs_total`` counts all."""
WINDOW_EVENTS = 1024
"""Recent events a streamed replay keeps for histories (older ones come from the store)."""


def _pairs(
    store: Store,
    uid: str,
    last: int,
    markers: list[tuple[int, dict[str, Any]]] | None,
    window: deque[tuple[int, dict[str, Any]]] | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(seq, event)`` of the journal, noting fresh-start markers and filling ``window``."""
    for record in store.read(uid, 1, last):
        pair = (record.seq, record.event)
        if markers is not None and is_marker(pair[1]):
            markers.append(pair)
        if window is not None:
            window.append(pair)
        yield pair


class WindowHistory:
    """Events ``seq <= end``: recent ones from a streamed window, older ones from ``older``."""

    def __init__(
        self, window: deque[tuple[int, dict[str, Any]]], end: int, older: StoreHistory
    ) -> None:
        self._window = window
        self._end = end
        self._older = older

    def __len__(self) -> int:
        return self._end

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._older.events(1, self._end)

    def tail(self, count: int) -> list[dict[str, Any]]:
        if count <= 0 or self._end <= 0:
            return []
        first = max(1, self._end - count + 1)
        window = self._window
        if window and window[0][0] <= first:
            lo = first - window[0][0]
            return [window[i][1] for i in range(lo, lo + self._end - first + 1)]
        return self._older.tail_of(first, self._end)


def _state(store: Store, uid: str, first_seq: int, stateful: bool) -> WorkingState:
    """The working state the execution starting at ``first_seq`` began with."""
    return store.state(uid, first_seq) if stateful else WorkingState()


def _replay_one(
    instance: Harness,
    run: executions.Execution,
    history: ListHistory | WindowHistory,
    tools: tuple[ToolSpec, ...] = (),
    state: WorkingState | None = None,
) -> list[str]:
    state = state or WorkingState()
    start = Start(
        run.id, run.config, tuple(run.messages), history, run.resume_from_seq, tools=tools,
        state=state,
    )  # fmt: skip
    sink = TurnSink(run.id, run.effects, None, legacy=run.legacy, state_version=state.version)
    try:
        instance.run(start, sink)
    except ReplayError:
        raise
    except Exception as exc:
        raise ReplayDivergedError(
            f"execution {run.id or 'legacy'}: harness failed on replay: {exc}"
        ) from exc
    left = sink.unconsumed()
    if left:
        raise ReplayDivergedError(
            f"execution {run.id or 'legacy'}: the harness consumed {sink.position} of "
            f"{len(run.effects)} recorded effects; next unconsumed at seq {left[0][0]} (I5)"
        )
    return sink.outputs


def _recorded_name(runs: list[executions.Execution]) -> str:
    for run in runs:
        if run.harness[0]:
            return run.harness[0]
    return ""

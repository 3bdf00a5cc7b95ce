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

A canceled execution (END CANCELED: a cancel request, a request's deadline, or ``cancel``
of a turn whose process was gone) is a recorded outcome and is replayed: its effects are
served in order, and where its record ends the sink stops the harness with
TurnCanceledError, as the live turn was stopped at that effect boundary (a MODEL_CALL
without its answer, abandoned mid-stream, is that point: it is never made). Its replay is
identical when every recorded effect was consumed and the harness stopped there, or ran to
its end without asking for more (the cancel landed before END), or, for a failed turn that
``cancel`` closed, failed again once its effects were served. The executions after it
replay as usual; a memory harness keeps the memory the canceled run left, as live.

Each execution also gets the working state its live run started with (``Start.state``: the
latest state committed before its first seq, found by stepping back over state records, see
``journal/stores/file/statefile.py``), and its ``sink.state`` commits write nothing and return the
versions the live run got, so a harness that keeps its state there replays as it ran; and
the state it commits must be the recorded one (as many commits, the last one's bytes equal
to the state the execution ended with), else the replay diverged. The states are read in
one pass beside the journal (:class:`StateCursor`), never looked up per execution.

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
from agentsessions.v1.results import ReplayReport

from . import executions
from .freshstart import ReplayInstances, is_marker
from .history import ListHistory, StoreHistory
from .registry import Registry
from .rules import check_harness
from .sinks import TurnSink
from .spi import Harness, HarnessDescriptor, Start, ToolOffer, ToolSpec, Workloads
from .workloads import StaticWorkloads


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

    def report(self) -> ReplayReport:
        """What the API hands back: this replay as the one ``ReplayReport`` value."""
        return ReplayReport(
            uid=self.uid,
            harness=self.harness,
            executions=self.executions,
            replayed=self.replayed,
            model_calls=self.model_calls,
            identical=self.identical,
            outputs=tuple(self.outputs),
            divergence=self.divergence,
            diverged_execution=self.diverged_execution,
            last_seq=self.head_after[0],
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
    workloads: Workloads | None = None,
) -> ReplayResult:
    """Re-drive every completed execution of ``uid``, in order; see the module docstring.

    Always from the session's first execution (a forked child's included: it shares the
    parent's prefix), since a memory harness can only reach execution N through 1..N-1.
    ``workloads`` gives each run the tools (``Start.tools``) of the workload its
    EXECUTION_START names, as its live run got them (``offers``: a fixed table's instead).
    """
    info = store.get(uid)
    tools = workloads or StaticWorkloads(None, offers)
    try:
        return _replay_streaming(store, uid, info, harnesses, harness, model_calls, tools)
    except executions.LegacyLogError:
        pass  # a v0.1.2 journal: its rules need the whole log
    return _replay_whole(store, uid, info, harnesses, harness, model_calls, tools)


def _replay_whole(
    store: Store,
    uid: str,
    info: SessionInfo,
    harnesses: Registry[Harness],
    harness: str,
    model_calls: Callable[[], int],
    tools: Workloads,
) -> ReplayResult:
    """:func:`replay` with the whole log read first: a v0.1.2 journal's runs are grouped
    by rules that need all of it (a modern journal streams, :func:`_replay_streaming`)."""
    events = [(r.seq, r.event) for r in store.read(uid, 1, info.last_seq)]
    runs = executions.replayable(executions.group(events))
    name = harness or info.meta.harness or _recorded_name(runs)
    if not name:
        raise InvalidArgumentError(
            f"session {uid} names no harness: rerun it with one",
            param="rerun_harness",
            session=uid,
        )
    descriptor = harnesses.create(name, project=info.meta.project).describe()
    for run in runs:
        check_harness(run, name, descriptor)
    result = ReplayResult(
        uid, name, executions=len(runs), head_before=(info.last_seq, info.last_hash)
    )
    calls_before = model_calls()
    cursor = StateCursor(store, uid)
    ordered = [e for _, e in events]
    # a memory harness replays every execution, in order, on one instance (see the module
    # docstring); a stateless one gets a fresh instance per execution
    instances = ReplayInstances(harnesses, name, descriptor, events, info.meta.project)
    for run in runs:
        try:
            instance = instances.for_run(run.first_seq, run.last_seq)
            # v0.1.2: one whole-log run sees the whole log; a modern run sees what came
            # before it (seqs are contiguous from 1: a prefix of the list, not a copy)
            end = None if run.legacy else run.first_seq - 1
            offered = tools.offers(uid, run.workload)
            states = cursor.around(run)
            history_ = ListHistory(ordered, end)
            result.add_outputs(_replay_one(instance, run, history_, offered, states))
        except ReplayError as exc:
            result.divergence, result.diverged_execution = str(exc), run.id or "legacy"
            break
        except AgentSessionsError as exc:
            result.divergence, result.diverged_execution = f"harness failed: {exc}", run.id
            break
        result.replayed += 1
    cursor.close()
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
    tools: Workloads,
) -> ReplayResult:
    """Replay a journal of contiguous executions holding one at a time (see the module
    docstring); LegacyLogError when it is not one (nothing has run yet then)."""
    last = info.last_seq
    markers: list[tuple[int, dict[str, Any]]] = []
    name, count, descriptor = _checked(store, uid, info, harnesses, harness, markers)
    result = ReplayResult(uid, name, executions=count, head_before=(last, info.last_hash))
    calls_before = model_calls()
    cursor = StateCursor(store, uid)
    instances = ReplayInstances(harnesses, name, descriptor, markers, info.meta.project)
    lineage = ReplayLineage(store, uid)  # its window: the recent events and their hashes
    window = lineage.window
    for run in executions.stream(_pairs(store, uid, last, None, window, lineage.hashes)):
        if not run.completed:
            continue
        history = WindowHistory(window, run.first_seq - 1, StoreHistory(store, uid, last))
        try:
            instance = instances.for_run(run.first_seq, run.last_seq)
            offered = tools.offers(uid, run.workload)
            states = cursor.around(run)
            result.add_outputs(_replay_one(instance, run, history, offered, states, lineage))
        except ReplayError as exc:
            result.divergence, result.diverged_execution = str(exc), run.id
            break
        except AgentSessionsError as exc:
            result.divergence, result.diverged_execution = f"harness failed: {exc}", run.id
            break
        result.replayed += 1
    cursor.close()
    result.model_calls = model_calls() - calls_before
    result.trim()
    after = store.get(uid)
    result.head_after = (after.last_seq, after.last_hash)
    return result


def _checked(
    store: Store,
    uid: str,
    info: SessionInfo,
    harnesses: Registry[Harness],
    harness: str,
    markers: list[tuple[int, dict[str, Any]]],
) -> tuple[str, int, HarnessDescriptor]:
    """A streamed replay's first pass: the harness's name, the completed executions and
    the harness's descriptor, each execution checked against it (``markers``: the
    fresh-start markers seen); LegacyLogError on a journal that does not stream."""
    name = harness or info.meta.harness
    checked: set[tuple[str, str]] = set()
    count, descriptor = 0, None
    for run in executions.stream(_pairs(store, uid, info.last_seq, markers)):
        name = name or run.harness[0]
        if not run.completed:
            continue
        count += 1
        if run.harness not in checked:
            if not name:
                break
            descriptor = descriptor or harnesses.create(name, project=info.meta.project).describe()
            check_harness(run, name, descriptor)
            checked.add(run.harness)
    if not name:
        raise InvalidArgumentError(
            f"session {uid} names no harness: rerun it with one",
            param="rerun_harness",
            session=uid,
        )
    descriptor = descriptor or harnesses.create(name, project=info.meta.project).describe()
    return name, count, descriptor


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
    hashes: deque[str] | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(seq, event)`` of the journal, noting fresh-start markers and filling ``window``
    (and ``hashes``: the chain hash of each record of the window, in step with it)."""
    for record in store.read(uid, 1, last):
        pair = (record.seq, record.event)
        if markers is not None and is_marker(pair[1]):
            markers.append(pair)
        if window is not None:
            window.append(pair)
        if hashes is not None:
            hashes.append(record.content_hash)
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
        if self._end <= 0:  # a read to seq 0 means "to the head": the first run has none
            return iter(())
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


class ReplayLineage:
    """Where a streamed replay's histories sit in the journal, for a remote harness's node
    to keep between the replayed executions (each Start then carries only what is new, as
    on a live run). Its ``uid`` is the session's rerun key, not the session: a node keeps a
    rerun's history apart from the one the live turns keep. The fence is 0 (a replay writes
    nothing); the chain hashes are the records' own, from the window the replay reads (older
    ones from the store), so a mark stands for exactly the journal's prefix up to it."""

    def __init__(self, store: Store, uid: str) -> None:
        self._store = store
        self._session = uid
        self.window: deque[tuple[int, dict[str, Any]]] = deque(maxlen=WINDOW_EVENTS)
        """The replay's recent events, which its histories serve (:class:`WindowHistory`)."""
        self.hashes: deque[str] = deque(maxlen=WINDOW_EVENTS)
        """The chain hash of each event of ``window``, in step with it."""

    @property
    def uid(self) -> str:
        return f"{self._session}#rerun"

    @property
    def fence(self) -> int:
        return 0

    def hash_at(self, seq: int) -> str:
        """The chain hash of record ``seq`` ("" when the journal has none there)."""
        window = self.window
        if window and window[0][0] <= seq <= window[-1][0]:
            return self.hashes[seq - window[0][0]]
        if seq <= 0:
            return ""
        records = self._store.read(self._session, seq, seq)
        return next((r.content_hash for r in records if r.seq == seq), "")


class StateCursor:
    """A session's working states in commit order, read once as the replay advances: it
    holds the current state and the next one, never the whole history."""

    def __init__(self, store: Store, uid: str) -> None:
        stateful = store.state(uid).version > 0  # else nothing to read
        self._states = store.states(uid) if stateful else iter(())
        self._current = WorkingState()
        self._next = next(self._states, None)

    def close(self) -> None:
        """Stop reading (a replay that diverged); the generator closes what it opened."""
        close = getattr(self._states, "close", None)
        if close is not None:
            close()

    def at(self, before_seq: int) -> WorkingState:
        """The latest state committed at a head below ``before_seq`` (asked in order)."""
        while self._next is not None and self._next[0] < before_seq:
            self._current = self._next[1]
            self._next = next(self._states, None)
        return self._current

    def around(self, run: executions.Execution) -> tuple[WorkingState, WorkingState]:
        """The state ``run`` started with, and the one it had when its END was written."""
        return self.at(run.first_seq), self.at(run.last_seq)


def _replay_one(
    instance: Harness,
    run: executions.Execution,
    history: ListHistory | WindowHistory,
    tools: tuple[ToolSpec, ...] = (),
    states: tuple[WorkingState, WorkingState] | None = None,
    lineage: ReplayLineage | None = None,
) -> list[str]:
    state, ended = states or (WorkingState(), WorkingState())
    start = Start(
        run.id, run.config, tuple(run.messages), history, run.resume_from_seq, tools=tools,
        state=state, lineage=lineage,
    )  # fmt: skip
    canceled = executions.canceled(run)
    sink = TurnSink(run.id, run.effects, None, legacy=run.legacy, state_version=state.version,
                    stops_at_end=canceled)  # fmt: skip
    try:
        instance.run(start, sink)
    except ReplayError:
        raise
    except Exception as exc:
        if not (canceled and _stopped_as_recorded(run, sink)):
            raise ReplayDivergedError(
                f"execution {run.id or 'legacy'}: harness failed on replay: {exc}"
            ) from exc
    left = sink.unconsumed()
    if left:
        raise ReplayDivergedError(
            f"execution {run.id or 'legacy'}: the harness consumed {sink.position} of "
            f"{len(run.effects)} recorded effects; next unconsumed at seq {left[0][0]} (I5)"
        )
    _check_state(run, sink, state, ended)
    return sink.outputs


def _stopped_as_recorded(run: executions.Execution, sink: TurnSink) -> bool:
    """A CANCELED run's harness raised where its live turn ended: at the recorded cancel
    point (the sink stopped it there, whatever the harness made of that), or, for a turn
    that failed (ERROR) before ``cancel`` closed it, by failing once its effects were all
    served. Anything unconsumed is still I5 divergence (checked after)."""
    return sink.stopped or bool(run.errors and not sink.unconsumed())


def _check_state(run: executions.Execution, sink: TurnSink, began: WorkingState,
                 ended: WorkingState) -> None:  # fmt: skip
    """The replayed run committed the working state its live run did."""
    recorded = ended.version - began.version
    if sink.state_commits != recorded:
        raise ReplayDivergedError(
            f"execution {run.id}: the harness committed {sink.state_commits} working states, "
            f"the live run {recorded}"
        )
    if recorded and sink.last_state != ended.data:
        raise ReplayDivergedError(
            f"execution {run.id}: the working state differs from the recorded version "
            f"{ended.version}"
        )


def _recorded_name(runs: list[executions.Execution]) -> str:
    for run in runs:
        if run.harness[0]:
            return run.harness[0]
    return ""

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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentsessions.errors import (
    AgentSessionsError,
    InvalidArgumentError,
    ReplayDivergedError,
    ReplayError,
)
from agentsessions.journal.store import Store

from . import executions
from .freshstart import ReplayInstances
from .history import ListHistory
from .registry import Registry
from .rules import check_harness
from .sinks import TurnSink
from .spi import Harness, Start


@dataclass
class ReplayResult:
    """What a replay reproduced: executions, outputs, model calls (must be 0), divergence."""

    uid: str
    harness: str
    executions: int = 0
    replayed: int = 0
    model_calls: int = 0
    outputs: list[str] = field(default_factory=list)
    divergence: str = ""
    diverged_execution: str = ""
    head_before: tuple[int, str] = (0, "")
    head_after: tuple[int, str] = (0, "")

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
) -> ReplayResult:
    """Re-drive every completed execution of ``uid``, in order; see the module docstring.

    Always from the session's first execution (a forked child's included: it shares the
    parent's prefix), since a memory harness can only reach execution N through 1..N-1.
    """
    info = store.get(uid)
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
    ordered = [e for _, e in events]
    # a memory harness replays every execution, in order, on one instance (see the module
    # docstring); a stateless one gets a fresh instance per execution
    instances = ReplayInstances(harnesses, name, descriptor, events)
    for run in runs:
        try:
            instance = instances.for_run(run.first_seq, run.last_seq)
            result.outputs += _replay_one(instance, run, ordered)
        except ReplayError as exc:
            result.divergence, result.diverged_execution = str(exc), run.id or "legacy"
            break
        except AgentSessionsError as exc:
            result.divergence, result.diverged_execution = f"harness failed: {exc}", run.id
            break
        result.replayed += 1
    result.model_calls = model_calls() - calls_before
    after = store.get(uid)
    result.head_after = (after.last_seq, after.last_hash)
    return result


def _replay_one(
    instance: Harness,
    run: executions.Execution,
    ordered: list[dict[str, Any]],
) -> list[str]:
    # v0.1.2: one whole-log run sees the whole log; a modern run sees what came before it
    # (seqs are contiguous from 1, so that is a prefix of the list, shared, not copied).
    history = ListHistory(ordered) if run.legacy else ListHistory(ordered, run.first_seq - 1)
    start = Start(run.id, run.config, tuple(run.messages), history, run.resume_from_seq)
    sink = TurnSink(run.id, run.effects, None, legacy=run.legacy)
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

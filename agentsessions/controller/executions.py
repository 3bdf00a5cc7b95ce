"""Reading a journal as executions: which events belong to which turn, and what they say.

An execution is the run of one harness invocation: EXECUTION_START, its INPUTs, the
recorded effects (MODEL_CALL/OUTPUT pairs, TOOL_CALL/TOOL_RESULT, USAGE, ...), then END or
ERROR. LIFECYCLE events are session-scoped and belong to no execution. Journals written by
the Go reference v0.1.2 carry no execution ids; those "legacy" runs follow digest 5.3/5.4
and section 8: a pure legacy log replays as ONE whole-log run (history = the whole log,
inputs = every INPUT, USAGE not part of the effect stream); a new EXECUTION_START
supersedes an unfinished legacy tail, and replay keeps the legacy prefix only through its
last END.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from typing import Any

from agentsessions.errors import InvalidExecutionLogError
from agentsessions.v1 import refusals, workloadref
from agentsessions.valueclass import field, value

Event = dict[str, Any]
EFFECT_KINDS = frozenset(
    {
        "EVENT_MODEL_CALL",
        "EVENT_OUTPUT",
        "EVENT_TOOL_CALL",
        "EVENT_TOOL_RESULT",
        "EVENT_USAGE",
        "EVENT_APPROVAL_REQUEST",
        "EVENT_APPROVAL_RESULT",
    }
)


@value
class Execution:
    """The recorded events of one harness invocation."""

    id: str
    first_seq: int
    legacy: bool = False
    start: Event | None = None
    inputs: list[Event] = field(default_factory=list)
    effects: list[tuple[int, Event]] = field(default_factory=list)
    end: Event | None = None
    errors: list[tuple[int, Event]] = field(default_factory=list)
    last_seq: int = 0

    @property
    def completed(self) -> bool:
        return self.end is not None

    @property
    def recorded_config(self) -> bytes:
        """The EXECUTION_START's config bytes as recorded (with any workload envelope)."""
        raw = (self.start or {}).get("execution_start", {}).get("config", "")
        return base64.b64decode(raw) if raw else b""

    @property
    def config(self) -> bytes:
        """The harness's config (``Start.config``): the recorded one without the envelope
        naming the workload (:mod:`agentsessions.v1.workloadref`)."""
        return workloadref.split(self.recorded_config)[0]

    @property
    def workload(self) -> str:
        """The digest of the workload this execution ran with; "" when it recorded none (a
        session without tools, or a turn recorded before digests were): the current one."""
        return workloadref.split(self.recorded_config)[1]

    @property
    def model(self) -> str:
        """The model spec this execution began on when it was not the session's model
        (``exec --model``); "" means the session's model."""
        return workloadref.parse(self.recorded_config)[2]

    @property
    def resume_from_seq(self) -> int:
        return int((self.start or {}).get("execution_start", {}).get("resume_from_seq", "0"))

    @property
    def input_count(self) -> int | None:
        """The count the EXECUTION_START declared (None for legacy runs or when absent)."""
        body = (self.start or {}).get("execution_start", {})
        return int(body["input_count"]) if "input_count" in body else None

    @property
    def harness(self) -> tuple[str, str]:
        body = (self.start or {}).get("execution_start", {})
        return str(body.get("harness", "")), str(body.get("harness_version", ""))

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The input messages, in order."""
        return [e.get("message", {}) for e in self.inputs]

    def check_complete_invocation(self) -> None:
        """Refuse a turn whose recorded INPUT count differs from its EXECUTION_START."""
        declared = self.input_count
        if declared is not None and declared != len(self.inputs):
            raise InvalidExecutionLogError(
                f"execution {self.id} declared {declared} inputs but {len(self.inputs)} were "
                "recorded (an incomplete invocation); it cannot be resumed",
                execution_id=self.id,
            )


def group(events: Iterable[tuple[int, Event]]) -> list[Execution]:
    """Split ``(seq, event)`` pairs into executions in first-seen order."""
    runs: list[Execution] = []
    by_id: dict[str, Execution] = {}
    legacy: Execution | None = None
    for seq, event in events:
        kind = event.get("kind", "")
        if kind == "EVENT_LIFECYCLE":
            continue
        exec_id = str(event.get("execution_id", ""))
        if exec_id:
            run = by_id.get(exec_id)
            if run is None:
                run = by_id[exec_id] = Execution(exec_id, seq)
                runs.append(run)
        else:
            if legacy is None or (legacy.completed and kind == "EVENT_INPUT"):
                legacy = Execution("", seq, legacy=True)
                runs.append(legacy)
            run = legacy
        _add(run, seq, event)
    return runs


def stream(events: Iterable[tuple[int, Event]]) -> Iterator[Execution]:
    """:func:`group` for a journal whose executions are contiguous (every journal this
    controller writes: one turn at a time, a resumed turn continues its own run), yielding
    each execution once the next one begins, so nothing but the current one is held.

    ID-less (legacy) events raise :class:`LegacyLogError`: the v0.1.2 rules need the whole
    log (:func:`replayable`), and so does an id that appears again after another began.
    """
    current: Execution | None = None
    finished: set[str] = set()
    for seq, event in events:
        kind = event.get("kind", "")
        if kind == "EVENT_LIFECYCLE":
            continue
        exec_id = str(event.get("execution_id", ""))
        if not exec_id:
            raise LegacyLogError(f"seq {seq} carries no execution id")
        if current is None or exec_id != current.id:
            if current is not None:
                yield current
                if len(finished) < _REAPPEAR_CHECK:
                    finished.add(current.id)
            if exec_id in finished:
                raise LegacyLogError(f"execution {exec_id} continues at seq {seq}")
            current = Execution(exec_id, seq)
        _add(current, seq, event)
    if current is not None:
        yield current


_REAPPEAR_CHECK = 4096
"""How many finished ids :func:`stream` remembers to notice one that continues later (a log
this controller wrote never does; past that many, :func:`Execution` START checks remain)."""


class LegacyLogError(Exception):
    """A journal :func:`stream` cannot split alone (a legacy or interleaved log)."""


def _add(run: Execution, seq: int, event: Event) -> None:
    kind = event.get("kind", "")
    run.last_seq = seq
    if kind == "EVENT_EXECUTION_START":
        if run.start is not None:
            raise InvalidExecutionLogError(f"execution {run.id} has two EXECUTION_START events")
        run.start = event
    elif kind == "EVENT_INPUT":
        run.inputs.append(event)
    elif kind == "EVENT_END":
        run.end = event
    elif kind == "EVENT_ERROR" and refusals.is_refusal(event):
        run.effects.append((seq, event))  # a refused model call: the harness observed it
    elif kind == "EVENT_ERROR":
        run.errors.append((seq, event))
    elif kind in EFFECT_KINDS:
        run.effects.append((seq, event))


def replayable(runs: list[Execution]) -> list[Execution]:
    """The executions replay re-drives, with the legacy rules applied.

    Modern runs: every completed one, a CANCELED one included (replay drives it to its
    recorded cancel point, :func:`canceled`). Legacy runs: merged into one whole-log run
    covering the prefix through the last legacy END (an unfinished legacy tail is superseded
    by a later EXECUTION_START, or simply not complete).
    """
    legacy = [r for r in runs if r.legacy]
    modern = [r for r in runs if not r.legacy and r.completed]
    done = [r for r in legacy if r.completed]
    if not done:
        return modern
    merged = Execution("", done[0].first_seq, legacy=True, end=done[-1].end)
    for run in done:
        merged.inputs.extend(run.inputs)
        merged.effects.extend((s, e) for s, e in run.effects if e.get("kind") != "EVENT_USAGE")
        merged.last_seq = run.last_seq
    return sorted([merged, *modern], key=lambda r: r.first_seq)


def canceled(run: Execution) -> bool:
    """True if ``run`` ended END CANCELED (a cancel request, a deadline, or ``cancel`` of a
    turn whose process was gone): its record stops at the point where it was stopped."""
    return bool((run.end or {}).get("end", {}).get("state") == "CANCELED")


def pending(runs: list[Execution]) -> Execution | None:
    """The trailing execution that has no END (an interrupted turn), if any."""
    if runs and not runs[-1].completed:
        return runs[-1]
    return None

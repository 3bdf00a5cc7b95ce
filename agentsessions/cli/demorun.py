"""``agentsessions demo``: the main job end to end, offline, narrated step by step.

On the embedded default (a file journal in a temporary home unless one is given, the
offline model ``scripted:seed=7``, the ``chat`` harness with a system prompt, or ``echo``
where chat is missing):

1. run a 3-turn session;
2. show its records;
3. start ``agentsessions exec`` as a subprocess on a slow model (its chat config names
   ``scripted:seed=7,delay=3``), SIGKILL it as soon as its MODEL_CALL is journaled, while
   the call is in flight, show the turn is interrupted (exec RUNNING), and resume it: the
   recorded call is made once more, its OUTPUT lands after it and END closes the turn;
4. replay the whole session: zero model calls, byte-identical;
5. fork it after turn 2 into two children and run a turn in each;
6. suspend and resume the parent's compute;
7. import the shipped Go reference journal and replay it with the echo harness;
8. verify every chain.

Each step prints one line (and sometimes a table); the run ends with a one-line summary.
A failing step raises its :class:`~agentsessions.errors.AgentSessionsError`, so the CLI
exits with that error's code. The library does the work, through the same ``Sessions``
engine every front end uses; this module only sequences, checks and narrates it.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agentsessions.errors import (
    AgentSessionsError,
    ChainBrokenError,
    HarnessError,
    InvalidExecutionLogError,
    ReplayError,
)

if TYPE_CHECKING:
    from agentsessions.sessions.local import LocalSessions
    from agentsessions.sessions.values import Frame, SessionFrame, Turn
    from agentsessions.sessions.values import LogRecord as Record

FIXTURE = "go-v0.1.2-completed.json"
DEMO_PROJECT = "demo"
MODEL = "scripted:seed=7"
SYSTEM_PROMPT = "You are a concise travel assistant."
TURNS = (
    "Plan three days in Lisbon.",
    "Which day suits a museum visit?",
    "Summarise the plan in one line.",
)
KILLED_INPUT = "What should I pack?"
BRANCHES = (("branch-sintra", "Swap day 3 for Sintra."), ("branch-porto", "Add a day in Porto."))
SLOW_MODEL = "scripted:seed=7,delay=3"
"""The killed turn's model: the same offline model, taking 3 s to answer."""
KILL_TIMEOUT = 30.0
POLL_SECONDS = 0.02
T = TypeVar("T")


@dataclass
class Narrator:
    """Prints one line per step (unless quiet) and keeps a JSON record of what happened."""

    quiet: bool
    steps: list[dict[str, Any]] = field(default_factory=list)
    pending: list[Any] = field(default_factory=list)

    def step(self, title: str, action: Callable[[], tuple[T, str]]) -> T:
        """Run ``action`` (returning a value and a detail line) and narrate the outcome."""
        from rich.text import Text

        self.pending.clear()
        try:
            value, detail = action()
        except AgentSessionsError as exc:
            self.steps.append({"step": title, "ok": False, "error": exc.to_dict()})
            line = Text.assemble(("✗ ", "bold red"))
            line.append(f"{title}: {exc.message}")
            self._print(line)
            raise
        self.steps.append({"step": title, "ok": True, "detail": detail})
        line = Text.assemble(("✓ ", "green"))
        line.append(f"{title}: ", style="bold")
        line.append(detail)
        self._print(line)
        return value

    def show(self, renderable: Any) -> None:
        """Print a table or other rich renderable under the current step's line."""
        if not self.quiet:
            self.pending.append(renderable)

    def _print(self, line: Any) -> None:
        from rich.padding import Padding

        from agentsessions.cli.render import emit, stdout_console

        if not self.quiet:
            console = stdout_console()
            console.print(line, soft_wrap=True)
            for renderable in self.pending:
                emit(console, Padding(renderable, (0, 0, 0, 2)))
        self.pending.clear()


@dataclass
class Demo:
    """What the steps share: the engine over the home, and the sessions made."""

    home: Path
    engine: LocalSessions
    narrator: Narrator
    harness: str
    uid: str = ""
    children: list[str] = field(default_factory=list)
    imported: str = ""
    turns: int = 0

    @property
    def config(self) -> bytes:
        """The harness config of every turn: a system prompt for chat, nothing for echo."""
        if self.harness != "chat":
            return b""
        return json.dumps({"system_prompt": SYSTEM_PROMPT}).encode()

    def records(self, uid: str, from_seq: int = 1) -> list[Record]:
        """The session's records from ``from_seq`` on."""
        return list(self.engine.read(uid, from_seq=from_seq))

    def turn(self, uid: str, text: str) -> Turn:
        """Run one turn in-process; what it did."""
        result = last_frame(self.engine.exec(uid, [text], config=self.config)).turn
        assert result is not None  # an exec's last frame always carries its turn
        self.turns += 1
        return result


def last_frame(frames: Iterator[Frame]) -> SessionFrame:
    """The last frame of a turn's stream (the session as the turn left it)."""
    from agentsessions.sessions.values import SessionFrame

    last = [frame for frame in frames if isinstance(frame, SessionFrame) and frame.last]
    return last[-1]


@contextlib.contextmanager
def demo_home(home: Path | None) -> Iterator[tuple[Path, bool]]:
    """The home to run in and whether it is temporary (then removed afterwards)."""
    if home is not None:
        yield home, False
        return
    with tempfile.TemporaryDirectory(prefix="agentsessions-demo-") as tmp:
        yield Path(tmp), True


@contextlib.contextmanager
def fixture_path() -> Iterator[Path]:
    """The shipped Go fixture as a real file (extracted when running from a zipapp)."""
    resource = importlib.resources.files("agentsessions").joinpath("data", FIXTURE)
    with importlib.resources.as_file(resource) as path:
        yield path


def run_demo(home: Path | None, *, as_json: bool = False) -> dict[str, Any]:
    """Run the demo; print the narration (or one JSON object) and return the summary."""
    from agentsessions.sessions.home import resolve_home

    started = time.monotonic()
    narrator = Narrator(quiet=as_json)
    explicit = resolve_home(home) if home is not None else None
    with demo_home(explicit) as (where, temporary):
        summary = _run_steps(narrator, where)
    summary.update(
        home=str(where),
        temporary_home=temporary,
        seconds=round(time.monotonic() - started, 3),
        steps=narrator.steps,
    )
    _finish(narrator, summary)
    return summary


def _finish(narrator: Narrator, summary: dict[str, Any]) -> None:
    from rich.text import Text

    from agentsessions.cli import render

    if narrator.quiet:
        render.write_json(summary)
        return
    where = "a temporary home (removed)" if summary["temporary_home"] else summary["home"]
    line = Text.assemble(("demo ok: ", "bold green"))
    line.append(
        f"{summary['turns']} turns, 1 killed mid-call and resumed, 2 replays with "
        f"{summary['model_calls_on_replay']} model calls, 2 forks, suspend and resume, "
        f"{summary['verified']} chains verified in {summary['seconds']:.1f} s in {where}"
    )
    render.stdout_console().print(line, soft_wrap=True)


def _run_steps(narrator: Narrator, home: Path) -> dict[str, Any]:
    from agentsessions.sessions.local import open_local

    with open_local(home, model=MODEL) as engine:
        demo = Demo(home, engine, narrator, _pick_harness())
        step = narrator.step
        step(f"run a 3-turn session (harness {demo.harness}, model {MODEL})", lambda: _three(demo))
        step("show its records", lambda: _show(demo))
        step("kill a turn mid-call with SIGKILL, then resume it", lambda: _kill_resume(demo))
        replayed = step("replay the session", lambda: _replay(demo, demo.uid, ""))
        step("fork after turn 2 into 2 children, a turn in each", lambda: _fork(demo))
        step("suspend and resume the parent's compute", lambda: _suspend_resume(demo))
        go = step("import the Go reference journal and replay it", lambda: _go(demo))
        verified = step("verify every chain", lambda: _verify_all(demo))
    return {
        "ok": True,
        "harness": demo.harness,
        "model": MODEL,
        "session_uid": demo.uid,
        "children": demo.children,
        "imported_uid": demo.imported,
        "turns": demo.turns,
        "model_calls_on_replay": replayed["model_calls"] + go["model_calls"],
        "replay": replayed,
        "go_replay": go,
        "verified": verified,
    }


def _pick_harness() -> str:
    """``chat`` when it can be found, else ``echo``."""
    from agentsessions.sessions.wiring import HARNESSES

    try:
        HARNESSES.factory("chat")
    except AgentSessionsError:
        return "echo"
    return "chat"


# --- 1, 2: a session and its records -------------------------------------------------------


def _three(demo: Demo) -> tuple[None, str]:
    from rich.text import Text

    from agentsessions.cli.render import clip, plain_table

    made = demo.engine.create(
        project=DEMO_PROJECT,
        name="demo-trip",
        harness=demo.harness,
        model=MODEL,
        labels={"source": "demo"},
    )
    demo.uid = made.uid
    table = plain_table()
    for column in ("turn", "user", "assistant"):
        table.add_column(column)
    calls = 0
    for number, text in enumerate(TURNS, start=1):
        turn = demo.turn(demo.uid, text)
        calls += turn.model_calls
        table.add_row(str(number), Text(text), Text(clip(" ".join(turn.outputs), 60)))
    demo.narrator.show(table)
    last = demo.engine.get(demo.uid).last_seq
    return None, f"{demo.uid}: {len(TURNS)} turns, {calls} model calls, seq 1-{last}"


def _show(demo: Demo) -> tuple[None, str]:
    from agentsessions.cli.recordview import event_kind, log_table

    records = demo.records(demo.uid)
    demo.narrator.show(log_table(records))
    first_turn = []
    for record in records:
        first_turn.append(event_kind(record.event))
        if first_turn[-1] == "END":
            break
    return None, f"{len(records)} records; each turn is " + " -> ".join(first_turn)


# --- 3: kill a turn while its model call is in flight, then resume it ----------------------


def cli_command() -> tuple[list[str], dict[str, str]]:
    """How to start this very command line in a subprocess, and its environment."""
    import agentsessions

    root = Path(agentsessions.__file__).resolve().parent.parent
    env = dict(os.environ)
    if root.is_file():  # running from the single-file app: run the same archive
        return [sys.executable, str(root)], env
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH", "")]))
    return [sys.executable, "-m", "agentsessions"], env


def _kill_resume(demo: Demo) -> tuple[None, str]:
    if demo.harness != "chat":
        return None, "skipped: needs the chat harness, which can name a slow model per turn"
    head = demo.engine.get(demo.uid).last_seq
    call_seq = _start_and_kill(demo, head)
    state = demo.engine.get(demo.uid).exec_state
    if state != "EXEC_RUNNING":
        raise InvalidExecutionLogError(f"after the kill exec is {state}, not RUNNING")
    result = last_frame(demo.engine.resume(demo.uid)).turn
    if result is None or result.model_calls != 1:
        raise InvalidExecutionLogError("resume did not call the model exactly once more")
    demo.turns += 1
    records = demo.records(demo.uid, head + 1)
    _check_resumed(records, call_seq)
    from agentsessions.cli.recordview import log_table

    demo.narrator.show(log_table(records))
    return None, (
        "killed while its model call waited for the answer (exec RUNNING; a call's intent is "
        "committed with its answer, so nothing of it was recorded); resume called the model "
        f"once: MODEL_CALL at seq {call_seq}, OUTPUT at {call_seq + 1}, END at {call_seq + 2}"
    )


def _start_and_kill(demo: Demo, head: int) -> int:
    """Start ``exec`` in a subprocess, SIGKILL it mid model call; return the call's seq.

    The turn names the slow model in its chat config (recorded in EXECUTION_START), so
    resume, which re-invokes the recorded call, uses it too.
    """
    config = {"system_prompt": SYSTEM_PROMPT, "model": SLOW_MODEL}
    demo.engine.release(demo.uid)  # the engine holds the writer between turns: hand it over
    command, env = cli_command()
    command += ["--home", str(demo.home), "exec", demo.uid, "--input", KILLED_INPUT]
    command += ["--config", json.dumps(config)]
    proc = subprocess.Popen(
        command,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        call_seq = _wait_for_model_call(demo, proc, head)
        proc.kill()  # SIGKILL: no handler, no cleanup, the model call still in flight
        proc.wait(KILL_TIMEOUT)
        if demo.records(demo.uid, call_seq):
            raise InvalidExecutionLogError("the model answered before the kill; nothing to resume")
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=KILL_TIMEOUT)
    return call_seq


def _wait_for_model_call(demo: Demo, proc: subprocess.Popen[str], head: int) -> int:
    """Poll the journal until the subprocess's turn inputs are durable (its slow model call
    comes next; the call commits with its answer); return the seq the call will take."""
    deadline = time.monotonic() + KILL_TIMEOUT
    while True:
        for record in demo.records(demo.uid, head + 1):
            if record.event.get("kind") == "EVENT_INPUT":
                return record.seq + 1
        if proc.poll() is not None:
            err = (proc.stderr.read() if proc.stderr else "").strip().splitlines()
            raise HarnessError(f"exec exited {proc.returncode} early: {err[-1] if err else ''}")
        if time.monotonic() > deadline:
            raise HarnessError(f"exec made no model call within {KILL_TIMEOUT:.0f} s")
        time.sleep(POLL_SECONDS)


def _check_resumed(records: list[Record], call_seq: int) -> None:
    """The resumed turn: one MODEL_CALL, its OUTPUT right after, then END."""
    kinds = {r.seq: str(r.event.get("kind", "")) for r in records}
    calls = [seq for seq, kind in kinds.items() if kind == "EVENT_MODEL_CALL"]
    expected = {call_seq + 1: "EVENT_OUTPUT", call_seq + 2: "EVENT_END"}
    if calls != [call_seq] or any(kinds.get(s) != k for s, k in expected.items()):
        raise InvalidExecutionLogError(f"the resumed turn's records are not as expected: {kinds}")


# --- 4: replay ----------------------------------------------------------------------------


def _replay(demo: Demo, uid: str, harness: str) -> tuple[dict[str, Any], str]:
    """Replay every turn of ``uid``; fail unless identical with zero model calls."""
    result = demo.engine.rerun(uid, harness=harness or None)
    if not result.identical:
        raise ReplayError(
            f"replay of {uid} is not identical: {result.divergence or result.model_calls}"
        )
    detail = (
        f"{result.replayed} of {result.executions} executions re-driven with harness "
        f"{result.harness}: {result.model_calls} model calls, byte-identical, the journal "
        f"untouched at seq {result.last_seq}"
    )
    return result.to_json(), detail


# --- 5, 6: fork, suspend and resume --------------------------------------------------------


def _fork(demo: Demo) -> tuple[None, str]:
    from rich.text import Text

    from agentsessions.cli.render import clip, plain_table

    ends = [r.seq for r in demo.records(demo.uid) if r.event.get("kind") == "EVENT_END"]
    at = ends[1]
    names = tuple(name for name, _ in BRANCHES)
    children = demo.engine.fork(
        demo.uid, at=at, count=len(BRANCHES), names=names, labels={"source": "demo"}
    )
    parent = [r.content_hash for r in demo.records(demo.uid)[:at]]
    table = plain_table()
    for column in ("child", "name", "user", "assistant"):
        table.add_column(column)
    for child, (name, text) in zip(children, BRANCHES, strict=True):
        own = demo.records(child.uid)
        if [r.content_hash for r in own[:at]] != parent:
            raise ChainBrokenError(f"{child.uid} does not share its parent's prefix")
        answer = " ".join(demo.turn(child.uid, text).outputs)
        table.add_row(Text(child.uid), Text(name), Text(text), Text(clip(answer, 48)))
        demo.children.append(child.uid)
    demo.narrator.show(table)
    return None, (
        f"2 children at seq {at}; each shares the parent's first {at} record hashes, "
        f"then a LIFECYCLE FORK marker parent@{at}, then its own turn"
    )


def _suspend_resume(demo: Demo) -> tuple[None, str]:
    before = demo.engine.get(demo.uid).compute_state
    cold = demo.engine.suspend(demo.uid)
    live = last_frame(demo.engine.resume(demo.uid)).session
    if cold.compute_state != "COMPUTE_COLD" or live.compute_state != "COMPUTE_LIVE":
        raise InvalidExecutionLogError(
            f"compute went {before} -> {cold.compute_state} -> {live.compute_state}"
        )
    return None, (
        f"compute {before} -> COMPUTE_COLD (LIFECYCLE SUSPEND at seq {cold.last_seq}) -> "
        f"COMPUTE_LIVE (LIFECYCLE RESUME at seq {live.last_seq})"
    )


# --- 7, 8: the Go journal, and every chain ------------------------------------------------


def _go(demo: Demo) -> tuple[dict[str, Any], str]:
    with fixture_path() as path:
        info = demo.engine.import_(path, project=DEMO_PROJECT, name="go-v0.1.2-completed")
    demo.imported = info.uid
    result, detail = _replay(demo, info.uid, "echo")
    return result, f"{info.uid}, {info.last_seq} records written by Go v0.1.2: {detail}"


def _verify_all(demo: Demo) -> tuple[int, str]:
    from agentsessions.cli.verify import verify_line

    reports = demo.engine.verify_all(strict=True)
    for uid, report in reports:
        demo.narrator.show(verify_line(report, uid))
        if not report.ok:
            raise ChainBrokenError(
                f"{uid} does not verify at seq {report.first_bad_seq}: {report.reason}"
            )
    total = sum(report.records for _, report in reports)
    return len(reports), f'{len(reports)} chains, {total} records, each from prev_hash ""'

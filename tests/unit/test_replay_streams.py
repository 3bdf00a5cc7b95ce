"""Replay streams (issue 8 item 3): it holds one execution at a time, whatever the length.

Counted, not timed: the number of :class:`~agentsessions.controller.executions.Execution`
objects alive at once during ``replay`` stays at a small constant for 200 executions (it was
every execution of the session), and a long replay keeps a bounded list of outputs while it
counts them all.
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

from agentsessions.controller import executions
from agentsessions.controller import replay as replay_module
from agentsessions.controller.replay import replay
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.sessions.wiring import HARNESSES, build_controller
from agentsessions.v1 import construct


def _session(home: Path, turns: int) -> tuple[FileStore, str]:
    store = FileStore(home)
    ctl = build_controller(store, home, runtime="local")
    say = [dict(construct.text_message("user", "turn 0"))]
    uid = ctl.exec(None, say, harness="echo").uid
    for i in range(1, turns):
        ctl.exec(uid, [dict(construct.text_message("user", f"turn {i}"))])
    return store, uid


def test_replay_holds_a_bounded_number_of_executions(tmp_path: Path, monkeypatch: Any) -> None:
    store, uid = _session(tmp_path, 200)
    alive = {"peak": 0}
    original = executions.Execution.__init__
    refs: list[weakref.ref[executions.Execution]] = []

    def tracked(self: executions.Execution, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        refs.append(weakref.ref(self))
        alive["peak"] = max(alive["peak"], sum(r() is not None for r in refs))

    monkeypatch.setattr(executions.Execution, "__init__", tracked)
    result = replay(store, uid, HARNESSES)
    assert result.identical and result.replayed == 200
    assert alive["peak"] <= 3  # the one being replayed, the next one starting, slack


def test_a_long_replay_keeps_the_last_outputs_and_counts_all(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr(replay_module, "OUTPUTS_KEPT", 5)
    store, uid = _session(tmp_path, 40)
    result = replay(store, uid, HARNESSES)
    assert result.identical and result.outputs_total == 40
    assert result.outputs == [f"echo:turn {i}" for i in range(35, 40)]
    assert result.to_json()["outputs_total"] == 40

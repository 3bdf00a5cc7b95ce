"""A turn costs the same at turn 10 and turn 1,000,000 (issue 8 item 3), counted, not timed.

A long-lived controller (``keep_writers``) opens a session's writer once: a later turn opens
no file, mints no fence, rewrites no TAIL hint and asks the store nothing (state and recent
history come from the held writer); a turn makes two syncs (START+INPUT before its model
call, MODEL_CALL with its OUTPUT together with END: spec decision 11); a caller hears of a
record only once it is durable; a power loss takes only unsynced commits and the turn
resumes; closing leaves a fresh hint.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agentsessions.controller.controller import Controller
from agentsessions.controller.held import KEEP_LONG_LIVED
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_session
from agentsessions.models import create_model
from agentsessions.runtimes import create_runtime
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.v1 import construct


class CountingFileSystem(FileSystem):
    """Counts the durable primitives a turn uses, by file name."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple[str, str]] = []

    def open(self, path: str | os.PathLike[str], flags: int, mode: int = 0o600) -> int:
        self.ops.append(("open", Path(path).name))
        return super().open(path, flags, mode)

    def sync(self, fd: int, *, full: bool = False) -> None:
        self.ops.append(("sync", ""))
        super().sync(fd, full=full)

    def replace(self, src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        self.ops.append(("replace", Path(dst).name))
        super().replace(src, dst)

    def write_file_atomic(
        self, path: str | os.PathLike[str], data: bytes, *, shared: bool = False
    ) -> None:
        self.ops.append(("write_file_atomic", Path(path).name))
        super().write_file_atomic(path, data, shared=shared)


def _controller(store: FileStore, keep: int = KEEP_LONG_LIVED) -> Controller:
    return Controller(
        store,
        harnesses=HARNESSES,
        models=create_model,
        runtime=create_runtime("local", home=store.home),
        default_model="scripted:seed=3",
        keep_writers=keep,
    )


def _say(text: str) -> list[dict[str, Any]]:
    return [dict(construct.text_message("user", text))]


def _kinds(store: FileStore, uid: str) -> list[str]:
    return [str(r.event["kind"]) for r in store.read(uid)]


def test_a_later_turn_opens_nothing_mints_no_fence_and_syncs_twice(tmp_path: Path) -> None:
    fs = CountingFileSystem()
    store = FileStore(tmp_path, fs=fs)
    ctl = _controller(store)
    uid = store.create(SessionMeta(uid=new_uid(), harness="chat")).uid
    ctl.exec(uid, _say("turn 1"))
    fence = ctl.writers.get(uid).fence  # type: ignore[union-attr]
    fs.ops.clear()
    for i in range(2, 6):
        result = ctl.exec(uid, _say(f"turn {i}"))
        assert result.model_calls == 1
    assert ctl.writers.opened == 1  # one lock and one fence for all five turns
    assert [op for op in fs.ops if op[0] != "sync"] == []  # no open, no fence, no hint
    assert len(fs.ops) == 2 * 4  # START+INPUT before the call; MODEL_CALL+OUTPUT with END
    assert ctl.writers.get(uid).fence == fence  # type: ignore[union-attr]
    ctl.close()
    assert verify_session(store, uid).ok


def test_a_later_turn_asks_the_store_nothing(tmp_path: Path, monkeypatch: Any) -> None:
    store = FileStore(tmp_path)
    ctl = _controller(store)
    uid = ctl.exec(None, _say("turn 1"), harness="chat").uid
    ctl.exec(uid, _say("turn 2"))

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("a held writer's turn must not read the store")

    for name in ("get", "read", "writer"):
        monkeypatch.setattr(store, name, refuse)
    result = ctl.exec(uid, _say("turn 3"))  # state and the chat history from the writer
    assert result.model_calls == 1
    monkeypatch.undo()
    assert _kinds(store, uid).count("EVENT_END") == 3
    ctl.close()


def test_a_turn_folds_each_event_once_and_its_writer_tells_the_store_s_state(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The writer's tail folds every committed event into the projections; the held writer
    reads them from there (it used to fold each commit a second time)."""
    from agentsessions.journal.stores.projection import Projection

    store = FileStore(tmp_path)
    ctl = _controller(store)
    uid = ctl.exec(None, _say("turn 1"), harness="chat").uid
    folded: list[str] = []
    apply = Projection.apply

    def counted(self: Projection, event: Any, seq: int = 0) -> None:
        folded.append(str(event["kind"]))
        apply(self, event, seq)

    monkeypatch.setattr(Projection, "apply", counted)
    ctl.exec(uid, _say("turn 2"))
    assert folded == _kinds(store, uid)[-5:]  # START, INPUT, MODEL_CALL, OUTPUT, END: once
    held = ctl.info(uid)
    ctl.close()  # the store answers now, from what the writer left
    stored = store.get(uid)
    for field in ("last_seq", "last_hash", "exec_state", "exec_seq", "exec_id", "compute_state"):
        assert getattr(held, field) == getattr(stored, field), field
    assert held.exec_state == "EXEC_COMPLETED"


def test_a_long_session_reopened_reads_its_recent_history_once(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A writer opened on a long session fills its window from the store on the first
    history read that reaches past what it appended; later turns read nothing."""
    store = FileStore(tmp_path)
    uid = store.create(SessionMeta(uid=new_uid(), harness="chat")).uid
    with store.writer(uid) as w:
        for i in range(100):  # 400 events: far more than the chat harness's 50-event history
            xid = f"{i:016x}"
            w.append(
                [
                    construct.execution_start(input_count=1, harness="chat", execution_id=xid),
                    construct.input_event(
                        construct.text_message("user", f"old {i}"), execution_id=xid
                    ),
                    construct.output_event(
                        construct.text_message("assistant", "ok"), execution_id=xid
                    ),
                    construct.end_event("COMPLETED", execution_id=xid),
                ]
            )
    ctl = _controller(store)
    ctl.exec(uid, _say("first turn after open"))  # one store read fills the window
    reads: list[tuple[int, int]] = []
    real = store.read

    def counted(u: str, a: int = 1, b: int = 0) -> Any:
        reads.append((a, b))
        return real(u, a, b)

    monkeypatch.setattr(store, "read", counted)
    for i in range(5):
        ctl.exec(uid, _say(f"turn {i}"))
    assert reads == []
    monkeypatch.undo()
    ctl.close()
    assert verify_session(store, uid).ok


def test_history_from_the_writer_is_what_the_store_holds(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    held, plain = _controller(store), _controller(store, keep=0)
    uid = held.exec(None, _say("a"), harness="chat").uid
    for i in range(30):
        held.exec(uid, _say(f"turn {i}"))
    writer = held.writers.get(uid)
    assert writer is not None
    head = writer.head[0]
    assert [r.payload for r in writer.read(head - 49)] == [
        r.payload for r in store.read(uid, head - 49)
    ]
    held.close()
    plain.exec(uid, _say("after close"))  # the lock was released
    assert plain.writers.get(uid) is None  # keep_writers=0: closed after its turn


def test_closing_leaves_a_fresh_tail_hint(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    ctl = _controller(store)
    uid = ctl.exec(None, _say("a"), harness="chat").uid
    for i in range(5):  # far fewer commits than HINT_EVERY_COMMITS
        ctl.exec(uid, _say(f"turn {i}"))
    ctl.close()
    hint = json.loads((tmp_path / "sessions" / uid / "TAIL").read_bytes())
    assert hint["position"]["last_seq"] == store.get(uid).last_seq


def test_another_controller_in_the_process_takes_over_an_idle_writer(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    first, second = _controller(store), _controller(store)
    uid = first.exec(None, _say("a"), harness="chat").uid
    second.exec(uid, _say("b"))  # first's writer is idle: it yields
    assert first.writers.get(uid) is None and second.writers.get(uid) is not None
    first.exec(uid, _say("c"))
    assert _kinds(store, uid).count("EVENT_END") == 3
    assert verify_session(store, uid).ok
    first.close()
    second.close()


def test_a_failed_model_call_keeps_its_intent_in_the_journal(tmp_path: Path) -> None:
    from agentsessions.errors import HarnessError

    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(["only one"]))
    store = FileStore(tmp_path / "home")
    ctl = _controller(store)
    ctl.default_model = f"scripted:file={answers}"
    uid = ctl.exec(None, _say("a"), harness="chat").uid
    with pytest.raises(HarnessError):
        ctl.exec(uid, _say("b"))  # the script ran out
    assert _kinds(store, uid)[-3:] == ["EVENT_INPUT", "EVENT_MODEL_CALL", "EVENT_ERROR"]
    ctl.close()


def test_the_engine_holds_a_writer_across_turns_and_frees_it_on_close(tmp_path: Path) -> None:
    """``agentsessions.open()`` is a long-lived engine: its second turn on a session opens
    no file (the writer is held); closing it frees the lock for anyone else."""
    import agentsessions

    fs = CountingFileSystem()
    store = FileStore(tmp_path, fs=fs)
    engine = agentsessions.open(tmp_path, store=store, runtime="local", model="scripted:seed=3")
    frames = list(engine.exec(None, ["turn 1"], harness="chat"))
    uid = frames[0].session.uid  # type: ignore[union-attr]
    fs.ops.clear()
    list(engine.exec(uid, ["turn 2"]))
    assert [op for op in fs.ops if op[0] == "open"] == []
    assert ("open", "FENCE") not in fs.ops
    engine.close()
    with FileStore(tmp_path) as other, other.writer(uid):
        pass  # the lock is free: no LockHeldError
    assert verify_session(FileStore(tmp_path), uid).ok

"""The work a turn repeats is done once (issue 8's turn target), counted, not timed.

A held writer decodes each recent record's event once, however many turns read it in their
history window; what is kept across turns (decoded events, the session's state, the tools
its workload offers) is seen to change on the next turn when what it came from changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentsessions.controller.controller import Controller
from agentsessions.controller.held import KEEP_LONG_LIVED
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.models import create_model
from agentsessions.runtimes import create_runtime
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.v1 import construct


def _controller(store: FileStore) -> Controller:
    return Controller(
        store,
        harnesses=HARNESSES,
        models=create_model,
        runtime=create_runtime("local", home=store.home),
        default_model="scripted:seed=3",
        keep_writers=KEEP_LONG_LIVED,
    )


def _say(text: str) -> list[dict[str, Any]]:
    return [dict(construct.text_message("user", text))]


def test_a_held_history_decodes_each_record_once(tmp_path: Path, monkeypatch: Any) -> None:
    """20 chat turns read a 50-event window each (1,000 event reads); each of the ~100
    records is decoded once, and the window still equals what the store holds."""
    store = FileStore(tmp_path)
    ctl = _controller(store)
    uid = ctl.exec(None, _say("turn 0"), harness="chat").uid
    decoded: list[int] = []
    real = Record.event

    def counting(self: Record) -> dict[str, Any]:
        decoded.append(self.seq)
        return real.fget(self)  # type: ignore[no-any-return, attr-defined]

    monkeypatch.setattr(Record, "event", property(counting))
    for i in range(1, 21):
        ctl.exec(uid, _say(f"turn {i}"))
    monkeypatch.undo()
    assert len(decoded) == len(set(decoded))  # never the same record twice
    writer = ctl.writers.get(uid)
    assert writer is not None
    head = writer.head[0]
    assert writer.events(head - 49) == [r.event for r in store.read(uid, head - 49)]
    ctl.close()


def test_a_held_window_refilled_after_a_gap_serves_the_store_events(tmp_path: Path) -> None:
    """Records that reach the writer out of order (a gap) clear the window; events read
    afterwards are those the store holds, never a stale decoded one."""
    store = FileStore(tmp_path)
    ctl = _controller(store)
    uid = ctl.exec(None, _say("a"), harness="chat").uid
    for i in range(3):
        ctl.exec(uid, _say(f"turn {i}"))
    writer = ctl.writers.get(uid)
    assert writer is not None
    before = writer.events(1)
    writer._recent.popleft()  # a window that no longer starts at the first record
    writer._events.popleft()
    assert writer.events(1) == before == [r.event for r in store.read(uid)]
    ctl.close()


def test_a_chat_session_reads_with_events_from_the_start(tmp_path: Path) -> None:
    """A long session reopened: the first turn's window comes from the store, and every
    later turn's history equals the store's last 50 events."""
    store = FileStore(tmp_path)
    uid = store.create(SessionMeta(uid=new_uid(), harness="chat")).uid
    with store.writer(uid) as w:
        for i in range(30):
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
    for i in range(3):
        ctl.exec(uid, _say(f"turn {i}"))
        writer = ctl.writers.get(uid)
        assert writer is not None
        head = writer.head[0]
        assert writer.events(head - 49, head) == [r.event for r in store.read(uid, head - 49)]
    ctl.close()


def test_held_info_is_kept_until_the_next_commit_changes_it(tmp_path: Path) -> None:
    """The writer's SessionInfo is built once between commits, and the next turn sees the
    head, exec state and update time that turn's commits moved."""
    store = FileStore(tmp_path)
    ctl = _controller(store)
    uid = ctl.exec(None, _say("a"), harness="chat").uid
    writer = ctl.writers.get(uid)
    assert writer is not None
    first = writer.info()
    assert writer.info() is first  # nothing committed: the same answer
    ctl.exec(uid, _say("b"))
    after = ctl.info(uid)
    last = list(store.read(uid))[-1]
    assert after is not first
    assert (after.last_seq, after.last_hash) == (last.seq, last.content_hash)
    assert after.last_seq == first.last_seq + 5  # START, INPUT, MODEL_CALL, OUTPUT, END
    assert after.exec_seq == first.last_seq + 1 and after.exec_state == "EXEC_COMPLETED"
    assert after.update_time_ns >= first.update_time_ns
    ctl.close()
    assert store.get(uid).last_seq == after.last_seq


def test_go_string_fast_path_writes_what_the_general_escaper_writes() -> None:
    """The ASCII shortcut of the input hash's string encoder (translate only when an HTML
    escape applies) gives exactly the escaping of the full path, and still refuses a lone
    surrogate."""
    import json

    import pytest

    from agentsessions.controller.inputhash import go_string
    from agentsessions.errors import InvalidArgumentError

    def slow(text: str) -> str:
        out = json.dumps(text)  # ensure_ascii: \\uXXXX for non-ASCII; undone below
        out = json.dumps(json.loads(out), ensure_ascii=False)
        for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
            out = out.replace(a, b)
        return out.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")

    for text in ["plain", "a & b", "x > y", "<p>", "tab\there", 'q"uote', "back\\slash",
                 "", "\x01ctl", "héllo <x>", "line\u2028sep\u2029", "日本 & 語" * 50,
                 "lorem ipsum " * 60]:  # fmt: skip
        assert go_string(text) == slow(text), text
    with pytest.raises(InvalidArgumentError):
        go_string("bad \ud800 surrogate")


def test_an_idle_held_writer_is_closed_whether_alone_or_not(tmp_path: Path) -> None:
    """The idle limit closes a writer unused for longer than it (the lone writer an
    engine's per-session controller holds, and any of several), freeing its lock."""
    store = FileStore(tmp_path)
    ctl = _controller(store)
    uids = [ctl.exec(None, _say(f"s{i}"), harness="chat").uid for i in range(3)]
    pool = ctl.writers
    for count in (3, 1):
        while len(pool._held) > count:
            pool.release(next(iter(pool._held)))
        stale = next(iter(pool._held))
        pool._held[stale].last_used -= pool.idle_seconds + 1  # as if unused that long
        assert pool.get(stale) is None
        assert stale not in pool._held
        with store.writer(stale):  # its lock is free again
            pass
    assert set(pool._held) <= set(uids)
    ctl.close()


def test_a_recorded_workload_is_read_again_even_when_its_file_looks_unchanged(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The store keeps the workload text by the file's (inode, size, mtime); recording a new
    one forgets it, so the next turn sees the new tools even when the replacement has the
    same size and the file system reports the same identity (coarse timestamps, a reused
    inode), as the stat below pretends."""
    import os

    from agentsessions.journal.stores.file import store as filestore
    from agentsessions.tools.recorded import RecordedWorkloads

    store = FileStore(tmp_path)
    uid = store.create(SessionMeta(uid=new_uid(), harness="chat")).uid
    text = '[tools.{}]\nmediation = "reported"\ndescription = "a tool"\n'
    store.set_workload(uid, text.format("aaa"))
    workloads = RecordedWorkloads(store)
    assert [t.name for t in workloads.offers(uid, "")] == ["aaa"]
    real_stat = os.stat
    frozen = real_stat(store.session_dir(uid) / "WORKLOAD")

    def same_identity(path: Any, *a: Any, **k: Any) -> os.stat_result:
        return frozen if str(path).endswith("WORKLOAD") else real_stat(path, *a, **k)

    monkeypatch.setattr(filestore.os, "stat", same_identity)
    store.set_workload(uid, text.format("bbb"))  # the same size
    assert [t.name for t in workloads.offers(uid, "")] == ["bbb"]
    assert store.workload(uid) == text.format("bbb")

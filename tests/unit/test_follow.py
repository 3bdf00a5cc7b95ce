"""Follow: every committed record once, in order, from any process; an idle follower sleeps.

The writer is a real subprocess appending 10,000 events in groups of varied size to a
store with tiny segments, so the follower crosses many rotations and background
compressions while it reads. Idleness is measured in wakeups (counts), never in time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from agentsessions.journal.format.segmentlog import SegmentLog
from agentsessions.journal.stores.file import watch
from agentsessions.journal.stores.file.store import FileStore, StoreOptions
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct

ROOT = Path(__file__).resolve().parents[2]
SMALL = StoreOptions(segment_max_bytes=16 * 1024)

WRITER = textwrap.dedent(
    """
    import sys
    from agentsessions.v1 import construct
    from agentsessions.journal.stores.file.store import FileStore, StoreOptions

    home, uid, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = FileStore(home, options=StoreOptions(segment_max_bytes=16 * 1024))
    done = 0
    with store.writer(uid) as w:
        while done < total:
            n = min(1 + done % 7, total - done)  # groups of 1..7 events
            w.append([construct.input_event(construct.text_message("user", f"m{done + i}"),
                                        execution_id="e1") for i in range(n)])
            done += n
    store.close()
    """
)


def _say(text: str) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", text), execution_id="e1")


def _session(store: FileStore) -> str:
    uid = new_uid()
    store.create(SessionMeta(uid=uid))
    return uid


def _text(record: Any) -> str:
    return str(record.event["message"]["parts"][0]["text"]["text"])


@pytest.mark.timeout(240)
def test_follow_under_a_writer_process_appending_10000_events(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "home", options=SMALL)
    uid = _session(store)
    total = 10_000
    follower = store.follow(uid, 1)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path / "home"), uid, str(total)], env=env
    )
    got = []
    try:
        for record in follower:
            got.append(record)
            if record.seq == total:
                break
    finally:
        follower.close()
        assert writer.wait() == 0
    assert [r.seq for r in got] == list(range(1, total + 1))
    assert [_text(r) for r in got] == [f"m{i}" for i in range(total)]
    stored = list(store.read(uid))
    assert [r.content_hash for r in got] == [r.content_hash for r in stored]
    journal = sorted(p.name for p in (tmp_path / "home" / "sessions" / uid / "journal").iterdir())
    assert sum(name.endswith(".zst") for name in journal) > 3, journal  # it crossed rotations


def test_follow_is_resumable_from_the_last_seq_and_waits_beyond_the_head(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "home", options=SMALL)
    uid = _session(store)
    with store.writer(uid) as w:
        for i in range(5):
            w.append([_say(f"m{i}")])
    first = list(store.follow(uid, 1, idle_timeout=0.0))
    assert [r.seq for r in first] == [1, 2, 3, 4, 5]
    assert [r.seq for r in store.follow(uid, 4, idle_timeout=0.0)] == [4, 5]
    beyond = store.follow(uid, 8)
    got: list[int] = []
    reader = threading.Thread(target=lambda: got.extend(next(beyond).seq for _ in range(2)))
    reader.start()
    with store.writer(uid) as w:
        for i in range(5, 10):
            w.append([_say(f"m{i}")])
    reader.join(timeout=60)
    beyond.close()
    assert got == [8, 9]


def test_follow_of_a_fork_child_starts_in_the_parent_prefix(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "home", options=SMALL)
    parent = _session(store)
    with store.writer(parent) as w:
        for i in range(6):
            w.append([_say(f"p{i}")])
    [child] = store.fork(parent, 4, [SessionMeta(uid=new_uid())])
    uid = child.meta.uid
    with store.writer(uid) as w:
        w.append([_say("c0")])
    seqs = [r.seq for r in store.follow(uid, 1, idle_timeout=0.0)]
    assert seqs == [1, 2, 3, 4, 5, 6]  # 4 of the parent, the fork marker, the child's own
    prefix = [_text(r) for r in store.follow(uid, 1, idle_timeout=0.0) if r.seq <= 4]
    assert prefix == ["p0", "p1", "p2", "p3"]
    assert [r.seq for r in store.follow(uid, 3, idle_timeout=0.0)] == [3, 4, 5, 6]
    assert [r.seq for r in store.follow(uid, 6, idle_timeout=0.0)] == [6]


def test_a_torn_tail_is_never_followed_and_recovery_continues_the_seqs(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "home")
    uid = _session(store)
    with store.writer(uid) as w:
        w.append([_say("a"), _say("b")])
    follower = store.follow(uid, 1)
    assert [next(follower).seq for _ in range(2)] == [1, 2]
    journal = tmp_path / "home" / "sessions" / uid / "journal"
    [seg] = [p for p in journal.iterdir() if p.name.endswith(".seg")]
    size = seg.stat().st_size
    log, _scan = SegmentLog.open(journal, session_id=uid, writable=False)
    end = log.position.offset  # the commit end: what follows is free space
    log.close()
    with seg.open("r+b") as f:  # a writer died mid-frame: half a frame header, no COMMIT
        f.seek(end)
        f.write(b"\x7f" * 10)
    assert seg.stat().st_size == size
    got: list[Any] = []
    reader = threading.Thread(target=lambda: got.append(next(follower)))
    reader.start()
    with store.writer(uid) as w:  # recovery cuts the torn bytes, then appends seq 3
        w.append([_say("c")])
    reader.join(timeout=60)
    follower.close()
    assert [(r.seq, _text(r)) for r in got] == [(3, "c")]
    assert [r.content_hash for r in store.read(uid)][2] == got[0].content_hash


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_an_idle_follower_sleeps_in_the_kernel(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "home")
    uid = _session(store)
    with store.writer(uid) as w:
        w.append([_say("a")])
    records = list(store.follow(uid, 1, idle_timeout=1.0))  # one second idle, then it ends
    assert [r.seq for r in records] == [1]
    watcher = store.last_watcher
    assert isinstance(watcher, watch.InotifyWatcher)
    assert watcher.wakeups <= 2  # a 50 ms poll would have woken about 20 times


def test_the_polling_fallback_backs_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSESSIONS_FOLLOW_POLL", "1")
    store = FileStore(tmp_path / "home")
    uid = _session(store)
    with store.writer(uid) as w:
        w.append([_say("a")])
    assert [r.seq for r in store.follow(uid, 1, idle_timeout=2.0)] == [1]
    watcher = store.last_watcher
    assert isinstance(watcher, watch.PollingWatcher)
    # 10+20+40+...+500 ms then 500 ms steps: about 10 looks in 2 s, not 40 (50 ms polls)
    assert watcher.wakeups <= 12


def test_inotify_wakes_on_a_write_in_the_directory(tmp_path: Path) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("inotify is Linux's")
    w = watch.InotifyWatcher(tmp_path, safety_seconds=3600)
    (tmp_path / "x").write_bytes(b"1")
    w.wait(None)  # returns at once: the event is queued (no timeout reached)
    assert w.wakeups == 1
    w.close()
    w.close()


def test_a_follower_that_listed_a_seg_the_writer_then_compressed_reads_the_zst(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A reader lists both forms of a sealed segment while the writer's compression runs;
    the writer removes the ``.seg`` once its ``.seg.zst`` is durable; the reader's open of
    the ``.seg`` then finds nothing and must read the ``.seg.zst`` (it failed with
    "No such file or directory" under load)."""
    from agentsessions.journal.format import segmentlog

    store = FileStore(tmp_path / "home", options=SMALL)
    uid = _session(store)
    with store.writer(uid) as w:
        w.append([_say("m0")])
    follower = store.follow(uid, 1, idle_timeout=1.0)  # stops once the journal is read
    assert next(follower).seq == 1  # its tail is the active segment
    with store.writer(uid) as w:  # it is sealed, and its successors sealed and compressed
        for i in range(1, 600):
            w.append([_say(f"m{i}" * 5)])
    journal = store.session_dir(uid) / "journal"
    assert sum(name.endswith(".seg.zst") for name in os.listdir(journal)) >= 2
    real = segmentlog.listing

    def stale_listing(fs: Any, directory: Path) -> Any:
        segs, tmps = real(fs, directory)
        if stale["on"]:  # as listed mid-compression: both forms of every sealed segment
            segs = {first: forms | {"seg"} for first, forms in segs.items()}
            stale["on"] = False  # the next look sees the directory as it is
        return segs, tmps

    stale = {"on": True}
    monkeypatch.setattr(segmentlog, "listing", stale_listing)
    seqs = [r.seq for r in follower]
    assert seqs == list(range(2, 601))

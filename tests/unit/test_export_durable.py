"""An export to a regular file is durable and atomic: a crash at any step leaves the old
file or the whole new one, never half of it, and a finished export survives a power loss."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsessions.errors import StorageError
from agentsessions.journal.format.durable import CrashFileSystem, SimulatedCrash
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.exchange import export_session
from agentsessions.journal.tools.verifyfile import verify_file
from agentsessions.v1.construct import text_message

OLD = b"an earlier export\n"


def _session(tmp_path: Path) -> tuple[FileStore, str]:
    store = FileStore(tmp_path / "home")
    uid = store.create(SessionMeta(uid=new_uid())).uid
    with store.writer(uid) as w:
        for i in range(3):
            w.append([{"kind": "EVENT_INPUT", "message": text_message("user", f"m{i}")}])
    return store, uid


def test_a_finished_export_survives_a_power_loss(tmp_path: Path) -> None:
    store, uid = _session(tmp_path)
    out = tmp_path / "s.agx"
    fs = CrashFileSystem()
    export_session(store, uid, out, fs=fs)
    fs.crash()
    assert verify_file(out).ok
    assert [p for p in tmp_path.iterdir() if ".tmp" in p.name] == []


def test_a_crash_at_any_step_leaves_the_old_file_or_the_new_one(tmp_path: Path) -> None:
    store, uid = _session(tmp_path)
    probe = CrashFileSystem()
    export_session(store, uid, tmp_path / "probe.agx", fs=probe)
    steps = len(probe.ops)
    assert steps >= 4  # create, write, sync, replace, directory sync
    for k in range(1, steps + 1):
        out = tmp_path / f"s{k}.agx"
        out.write_bytes(OLD)
        fs = CrashFileSystem(crash_at_op=k)
        with pytest.raises(SimulatedCrash):
            export_session(store, uid, out, fs=fs)
        fs.crash()
        if not out.exists():
            # only before the last step, the directory sync: the model then loses the unsynced
            # rename whole (a real disk keeps the old name or the new one)
            assert k == steps, f"crash before step {k} lost the old export"
            continue
        data = out.read_bytes()
        if data != OLD:
            assert verify_file(out).ok, f"crash before step {k}: a partial export"


def test_a_full_disk_keeps_the_old_file_and_leaves_no_tmp(tmp_path: Path) -> None:
    store, uid = _session(tmp_path)
    out = tmp_path / "s.agx"
    out.write_bytes(OLD)
    with pytest.raises(StorageError):
        export_session(store, uid, out, fs=CrashFileSystem(enospc_at_write=1))
    assert out.read_bytes() == OLD
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []


# --- streaming: byte-identical output, every chunk durable, memory independent of length ---

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "export" / "small.export"
"""What the in-memory export (before it streamed) wrote for :func:`_golden_session`."""


def _golden_session(tmp_path: Path) -> tuple[FileStore, str]:
    from agentsessions.v1 import construct

    store = FileStore(tmp_path / "home")
    uid = "sess-0123456789abcdef01234567"
    store.create(SessionMeta(uid=uid, name="golden", create_time_ns=1_700_000_000_000_000_000))
    with store.writer(uid) as w:
        for i in range(5):
            text = construct.text_message("user", f'm{i} \u00e9 "q"')
            ts = f"2026-01-01T00:00:0{i}Z"
            w.append([{"kind": "EVENT_INPUT", "execution_id": "e1", "ts": ts, "message": text}])
    return store, uid


def test_a_streamed_export_is_byte_identical_to_the_in_memory_one(tmp_path: Path) -> None:
    from agentsessions.journal.format import zstdcodec

    store, uid = _golden_session(tmp_path)
    raw, packed = tmp_path / "raw.agx", tmp_path / "z.agx"
    summary = export_session(store, uid, raw, compress=False)
    assert raw.read_bytes() == GOLDEN.read_bytes()
    assert summary["bytes"] == len(GOLDEN.read_bytes())
    summary = export_session(store, uid, packed)
    data = packed.read_bytes()
    assert summary["bytes"] == len(data)
    assert zstdcodec.one_checksummed_frame(data)  # one frame, every byte checked on import
    assert zstdcodec.decompress(data, 1 << 20) == GOLDEN.read_bytes()


def test_an_export_to_a_fifo_is_streamed_in_place(tmp_path: Path) -> None:
    import os
    import threading

    store, uid = _golden_session(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    export_session(store, uid, fifo, compress=False)
    reader.join()
    assert got == [GOLDEN.read_bytes()]
    assert fifo.is_fifo()  # written through, never renamed over


def _wide_session(tmp_path: Path) -> tuple[FileStore, str]:
    """A session whose export spans several chunks (several writes to the tmp file)."""
    store = FileStore(tmp_path / "home")
    uid = store.create(SessionMeta(uid=new_uid())).uid
    with store.writer(uid) as w:
        for i in range(6):
            text = f"{i}" * (600 << 10)
            w.append([{"kind": "EVENT_INPUT", "message": text_message("user", text)}])
    return store, uid


def test_a_crash_at_any_step_of_a_chunked_export_leaves_the_old_file_or_the_new_one(
    tmp_path: Path,
) -> None:
    store, uid = _wide_session(tmp_path)
    probe = CrashFileSystem()
    export_session(store, uid, tmp_path / "probe.agx", compress=False, fs=probe)
    writes = [op for op, _ in probe.ops if op == "write"]
    assert len(writes) >= 3, probe.ops  # the export really went out in pieces
    for k in range(1, len(probe.ops) + 1):
        out = tmp_path / f"s{k}.agx"
        out.write_bytes(OLD)
        fs = CrashFileSystem(crash_at_op=k)
        with pytest.raises(SimulatedCrash):
            export_session(store, uid, out, compress=False, fs=fs)
        fs.crash()
        if not out.exists():
            assert k == len(probe.ops), f"crash before step {k} lost the old export"
            continue
        if out.read_bytes() != OLD:
            assert verify_file(out).ok, f"crash before step {k}: a partial export"


@pytest.mark.parametrize("write", [1, 2, 3])
def test_a_full_disk_midway_keeps_the_old_file_and_leaves_no_tmp(
    tmp_path: Path, write: int
) -> None:
    store, uid = _wide_session(tmp_path)
    out = tmp_path / "s.agx"
    out.write_bytes(OLD)
    with pytest.raises(StorageError, match="No space left"):
        export_session(store, uid, out, compress=False, fs=CrashFileSystem(enospc_at_write=write))
    assert out.read_bytes() == OLD
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []


def test_a_failing_read_midway_keeps_the_old_file_and_leaves_no_tmp(tmp_path: Path) -> None:
    """The store fails after some records were streamed: nothing replaces the old file."""
    from agentsessions.errors import JournalCorruptError

    store, uid = _wide_session(tmp_path)
    real_read = store.read

    def failing(*args: object) -> object:
        for i, record in enumerate(real_read(*args)):  # type: ignore[arg-type]
            if i == 4:
                raise JournalCorruptError("a damaged segment", seq=record.seq)
            yield record

    store.read = failing  # type: ignore[method-assign,assignment]
    out = tmp_path / "s.agx"
    out.write_bytes(OLD)
    with pytest.raises(JournalCorruptError):
        export_session(store, uid, out)
    assert out.read_bytes() == OLD
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []


_BUILD = """
import sys
from pathlib import Path
from agentsessions.v1 import construct
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
store = FileStore(Path(sys.argv[1]))
uid = store.create(SessionMeta(uid=new_uid())).uid
n = int(sys.argv[2])
event = {"kind": "EVENT_INPUT", "message": construct.text_message("user", "x" * 100)}
with store.writer(uid) as w:
    for at in range(0, n, 2000):
        w.append([event] * min(2000, n - at))
store.close()
print(uid)
"""
_PEAK = """
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], capture_output=True)
sys.stderr.buffer.write(p.stderr)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(p.returncode)
"""


def _export_peak(tmp_path: Path, events: int) -> int:
    """Peak RSS (KiB) of ``agentsessions export`` of a session of ``events`` small events."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)}
    home = tmp_path / f"home{events}"
    build = [sys.executable, "-c", _BUILD, str(home), str(events)]
    uid = subprocess.run(build, env=env, check=True, capture_output=True, text=True).stdout
    cli = [sys.executable, "-m", "agentsessions", "--home", str(home), "export", uid.strip()]
    cli += ["-o", str(tmp_path / f"{events}.agx")]
    run = subprocess.run([sys.executable, "-c", _PEAK, *cli], env=env, capture_output=True)
    assert run.returncode == 0, run.stderr
    return int(run.stdout)


def test_export_memory_does_not_grow_with_the_session(tmp_path: Path) -> None:
    """The in-memory export held the whole file, then its zstd: ~107 MiB at 200,000 events
    and growing with every event. Streamed, ten times the events cost the same memory."""
    small, large = _export_peak(tmp_path, 20_000), _export_peak(tmp_path, 200_000)
    assert large < 1.5 * small, f"{small} KiB at 20,000 events, {large} KiB at 200,000"
    assert verify_file(tmp_path / "200000.agx").records == 200_000

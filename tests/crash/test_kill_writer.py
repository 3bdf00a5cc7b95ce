"""Crash tests: a real writer process killed with SIGKILL at random points, many times.

After each kill, a new writer recovers the session (cutting any torn tail) and we check
the promise users rely on: every acknowledged commit is present with the hash that was
acknowledged, nothing unacknowledged is half-visible, and the chain verifies.
``AGENTSESSIONS_TORTURE`` sets the number of kills (CI runs a bounded number).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentsessions.journal.stores.file.store import FileStore, StoreOptions
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_dir

WRITER = Path(__file__).with_name("writer_proc.py")
KILLS = int(os.environ.get("AGENTSESSIONS_TORTURE", "12"))


def _run_and_kill(
    home: Path, uid: str, seg_max: int, seed: int, delay: float
) -> list[tuple[int, str]]:
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), str(home), uid, str(seg_max), str(seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    # the delay counts from the first acknowledgement, not from the process start: on a
    # loaded machine (parallel test workers) the interpreter's start alone can outlast it
    first = proc.stdout.readline()
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=30)
    acks = []
    for line in (first + out).decode().splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "ACK":
            acks.append((int(parts[1]), parts[2]))
    assert acks or proc.returncode == -signal.SIGKILL, err.decode()[-2000:]
    return acks


@pytest.mark.timeout(120 + 15 * KILLS)  # each kill re-reads and re-verifies the whole journal
@pytest.mark.parametrize("seg_max", [16 << 20, 64 * 1024], ids=["one-segment", "rotating"])
def test_acknowledged_commits_survive_sigkill(tmp_path: Path, seg_max: int) -> None:
    home = tmp_path / "home"
    store = FileStore(home, options=StoreOptions(segment_max_bytes=seg_max))
    uid = new_uid()
    store.create(SessionMeta(uid=uid))
    rng = random.Random(seg_max)
    acked: dict[int, str] = {}
    for kill in range(KILLS):
        for seq, digest in _run_and_kill(home, uid, seg_max, kill, rng.uniform(0.3, 0.9)):
            acked[seq] = digest
        with store.writer(uid) as writer:  # recovery runs here
            head_seq, _ = writer.head
        assert head_seq >= max(acked, default=0)
        stored = {r.seq: r.content_hash for r in store.read(uid)}
        missing = {s: h for s, h in acked.items() if stored.get(s) != h}
        assert not missing, f"kill {kill}: acknowledged commits lost or changed: {missing}"
        report = verify_dir(store.session_dir(uid))
        assert report.ok, report.to_json()
        assert report.last_seq == head_seq
    assert acked, "the writer never acknowledged a commit"
    store.close()

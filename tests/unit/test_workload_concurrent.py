"""Two writers recording a session's workload at once both succeed (found by the torture
suite's concurrent writers).

A turn records its ``--tools`` workload before it takes the session's writer lock, so two
processes' turns on one session write ``WORKLOAD`` (and its kept copy) at the same moment.
Both used the one tmp name ``WORKLOAD.tmp`` and removed it first as stale: one pulled the
other's tmp file from under its rename, which failed (StorageError, the turn refused).
"""

from __future__ import annotations

import threading
from pathlib import Path

from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid

ROUNDS = 150


def test_concurrent_workload_writes_never_fail(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FileStore(home) as store:
        uid = store.create(SessionMeta(uid=new_uid())).uid
    errors: list[BaseException] = []

    def write(tag: str) -> None:
        with FileStore(home) as store:  # another process's store: nothing shared in memory
            try:
                for i in range(ROUNDS):
                    store.set_workload(uid, f"# {tag} {i % 3}\n")
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=write, args=(t,)) for t in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]
    with FileStore(home) as store:
        assert (store.workload(uid) or "").startswith("# ")

"""Byte flips and truncations at every offset of the acknowledged tail and of every
metadata file of every session.

A writer process runs the workload (every kind of turn, so the sessions hold tool receipts,
workloads, fork bases, fences and working state), everything is resumed and checked, the
engine closed. Then, one damage at a time (a flipped byte, or the file cut at that offset)
and undone before the next, a fresh store judges the damaged session:

- **detected**: ``verify`` fails, or reading it refuses with one of our errors;
- **harmless**: it verifies and everything a reader sees (records and their hashes, the
  metadata, the workload, the working state, the tool receipts of calls still open) is
  what it was (the receipt of an answered call is never read again: its TOOL_RESULT is in
  the chain);
- **undetected**: it verifies and something a reader sees changed. Must be 0.

The acknowledged tail is the tail segment's bytes up to the last commit's end (the TAIL
hint's offset); the metadata files are every file of the session directory outside
``journal/``. The default run takes every ``STEP``-th offset of each (STEP a prime, so the
sample walks every field of a frame); ``AGENTSESSIONS_TORTURE=N`` takes every offset.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentsessions.errors import AgentSessionsError
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.tools.verify import verify_session
from tests.torture import tally
from tests.torture.ledger import Ledger
from tests.torture.procs import start_writer
from tests.torture.rounds import count_acked, settle
from tests.torture.tally import TALLY

STEP = 1 if tally.SIZE else 101
TURNS = 10
RUNTIME_FILES = ("LOCK",)  # who holds the lock: advice for messages, never read as data


def _seen(store: FileStore, uid: str) -> Any:
    """Everything a reader sees of ``uid``; raises AgentSessionsError if it refuses."""
    records = [(r.seq, r.content_hash, r.event) for r in store.read(uid)]
    answered = {e["result"].get("id") for _s, _h, e in records if "result" in e}
    keys = [
        str(e["tool"].get("idempotency_key", ""))
        for _s, _h, e in records
        if e.get("kind") == "EVENT_TOOL_CALL" and e["tool"].get("id") not in answered
    ]
    state = store.state(uid)
    return (records, store.get(uid).meta.to_json(), store.workload(uid),
            [store.tool_receipt(uid, k) for k in keys], state.version, state.data)  # fmt: skip


def _judge(home: Path, uid: str, before: Any) -> str:
    """detected, harmless or undetected (see the module doc)."""
    store = FileStore(home)
    try:
        if not verify_session(store, uid).ok:
            return "detected"
        return "harmless" if _seen(store, uid) == before else "undetected"
    except AgentSessionsError:
        return "detected"
    finally:
        store.close()


def _targets(sdir: Path) -> Iterator[tuple[Path, int]]:
    """(file, how many of its bytes are acknowledged data) for the tail and the metadata."""
    tail = json.loads((sdir / "TAIL").read_text())["position"]
    yield sdir / "journal" / f"{tail['segment']:016x}.seg", int(tail["offset"])
    for path in sorted(sdir.iterdir()):
        if path.is_file() and path.name not in RUNTIME_FILES:
            yield path, path.stat().st_size


def _damages(path: Path, size: int, rng: Any) -> Iterator[tuple[str, bytes]]:
    """Each damage of ``path``'s first ``size`` bytes: a flip, then a cut, per offset."""
    raw = path.read_bytes()
    for at in range(rng.randrange(STEP), size, STEP):
        mask = rng.randrange(1, 256)
        yield "flip", raw[:at] + bytes([raw[at] ^ mask]) + raw[at + 1 :]
        yield "cut", raw[:at]


def _sample(tmp_path: Path, seed: int) -> tuple[Path, Ledger]:
    home, effects, ledger = tmp_path / "home", tmp_path / "effects.txt", Ledger()
    writer = start_writer(home, effects, seed, f"--turns={TURNS}")
    assert writer.finish() == 0, writer.stderr()
    writer.kill()  # its warm hosts
    ledger.take(writer.lines)
    settle(home, effects, ledger)
    count_acked(ledger)
    return home, ledger


@pytest.mark.torture
@pytest.mark.timeout(600 + 1200 * min(tally.SIZE, 1))
def test_every_damage_of_the_acknowledged_tail_and_metadata_is_detected_or_harmless(
    tmp_path: Path,
) -> None:
    rng = tally.rng("damage")
    home, _ledger = _sample(tmp_path, rng.randrange(1 << 30))
    undetected: list[str] = []
    for sdir in sorted((home / "sessions").iterdir()):
        with FileStore(home) as store:
            before = _seen(store, sdir.name)
        for path, size in _targets(sdir):
            raw = path.read_bytes()
            for kind, damaged in _damages(path, size, rng):
                path.write_bytes(damaged)
                verdict = _judge(home, sdir.name, before)
                path.write_bytes(raw)
                TALLY.fault(kind)
                TALLY.detected += verdict == "detected"
                if verdict == "undetected":
                    where = f"{path.relative_to(home)} ({kind}, {len(damaged)} bytes)"
                    undetected.append(where)
    TALLY.undetected += len(undetected)
    by_file = collections.Counter(w.split("/")[-1].split(" ")[0] for w in undetected)
    assert not undetected, f"seed {tally.SEED}: undetected damage {by_file}: {undetected[:20]}"

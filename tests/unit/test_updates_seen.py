"""The execution id a turn's stream names on its deltas, read lazily (server/updates.py):
whatever records went by, it is the one a record-by-record read gives."""

from __future__ import annotations

from pathlib import Path

import agentsessions
from agentsessions.server.updates import Seen
from agentsessions.sessions.values import LogRecord, RecordFrame


def _naive(records: list[LogRecord]) -> str:
    execution = ""
    for record in records:
        execution = str(record.event.get("execution_id", "")) or execution
    return execution


def test_the_lazy_execution_id_is_the_record_by_record_one(tmp_path: Path) -> None:
    with agentsessions.open(tmp_path) as engine:
        frames = list(engine.exec(None, ["one"]))
        first = [f.record for f in frames if isinstance(f, RecordFrame)]
        uid = frames[-1].uid
        second = [f.record for f in engine.exec(uid, ["two"]) if isinstance(f, RecordFrame)]
    records = first + second
    without = [r for r in records if not r.event.get("execution_id")]
    with_id = [r for r in records if r.event.get("execution_id")]
    assert with_id and len({r.event["execution_id"] for r in with_id}) == 2
    # every order of reading, asked after each record or only at the end, and records
    # without an id after ones with it
    for order in (records, records[::-1], with_id + without, without + with_id):
        step, batch = Seen(None), Seen(None)  # type: ignore[arg-type]
        for n, record in enumerate(order, 1):
            step.saw(record)
            batch.saw(record)
            assert step.execution == _naive(order[:n])
        assert batch.execution == _naive(order)

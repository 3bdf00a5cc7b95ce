"""``log`` prints each row as it is read, in fixed columns (issue 17: a 15,005-record log
was silent for seconds while a rich table measured every row; bench/log.py has the figures)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest

from agentsessions.cli import recordview
from agentsessions.journal.format.records import Record


def _record(seq: int, kind: str, body: dict[str, object], execution: str = "e" * 16) -> Record:
    event = {"kind": f"EVENT_{kind}", "execution_id": execution, **body}
    return Record.seal(json.dumps(event).encode(), seq=seq, prev_hash="", fence=1)


def test_each_row_is_written_before_the_next_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    seen: list[str] = []

    def records() -> Iterator[Record]:
        for seq in range(1, 4):
            seen.append(out.getvalue())  # what was printed before this record was read
            yield _record(seq, "INPUT", {"input": {"message": {"role": "user", "text": "hi"}}})

    assert recordview.print_log(records()) == 3
    assert seen[0] == ""
    assert seen[1].splitlines()[0] == recordview.LOG_HEADER
    assert [line.split()[0] for line in seen[1].splitlines()[1:]] == ["1"]
    assert len(seen[2].splitlines()) == 3  # the header and two rows, before the third is read
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["seq", "kind", "execution", "hash", "summary"]
    assert [line.split()[0] for line in lines[1:]] == ["1", "2", "3"]


def test_columns_line_up_whatever_the_execution_id() -> None:
    short = recordview.log_line(_record(7, "END", {}, execution=""))
    long = recordview.log_line(_record(12345, "APPROVAL_REQUEST", {}))
    header = recordview.LOG_HEADER
    for line in (short, long):  # the hash starts under the header's "hash"
        assert line.index(line.split()[3]) == header.index("hash")
    assert short.split()[:3] == ["7", "END", "-"]


def test_an_empty_range_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    assert recordview.print_log(iter(())) == 0
    assert out.getvalue() == "no records in that range\n"

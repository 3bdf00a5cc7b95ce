"""One judge of an export header (:func:`exportfile.check_header`), which both readers use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentsessions.errors import FormatError
from agentsessions.journal.tools import exportfile

GOOD: dict[str, Any] = {
    "agentsessions_export": 1,
    "session": {"uid": "sess-0123456789abcdef01234567", "labels": {"a": "b"}, "annotations": {}},
    "records": 0,
    "last_seq": 0,
    "last_hash": "",
}
BAD: list[tuple[dict[str, Any], str]] = [
    ({"session": {"labels": "a=b"}}, "session.labels"),
    ({"session": {"annotations": ["x"]}}, "session.annotations"),
    ({"session": {"labels": {"a": 1}}}, "session.labels"),
    ({"session": {"origin": "cli"}}, "session.origin"),
    ({"session": {"create_time_ns": True}}, "session.create_time_ns"),
    ({"session": {"encrypted": "yes"}}, "session.encrypted"),
    ({"session": 5}, "session is not an object"),
    ({"last_seq": None}, "last_seq is not a count"),
    ({"records": "1"}, "records is not a count"),
    ({"agentsessions_export": 2}, "unsupported export header"),
]


def test_a_well_formed_header_passes_with_its_session_and_head() -> None:
    meta, declared = exportfile.check_header(GOOD, "f")
    assert meta == GOOD["session"]
    assert declared == {"records": 0, "last_seq": 0, "last_hash": ""}
    assert exportfile.check_header({**GOOD, "session": None}, "f")[0] is None


@pytest.mark.parametrize("key", ["records", "last_seq", "last_hash"])
def test_a_header_missing_a_head_field_is_a_format_error(key: str) -> None:
    header = {k: v for k, v in GOOD.items() if k != key}
    with pytest.raises(FormatError, match=f"has no {key}"):
        exportfile.check_header(header, "f")


@pytest.mark.parametrize(("change", "says"), BAD)
def test_both_readers_refuse_what_the_header_check_refuses(
    change: dict[str, Any], says: str, tmp_path: Path
) -> None:
    header = {**GOOD, **change}
    with pytest.raises(FormatError, match=says):
        exportfile.check_header(header, "f")
    from agentsessions.journal.format import canonical

    end = {"end": {"records": 0, "last_seq": 0, "last_hash": ""}}
    data = canonical.dumps(header) + b"\n" + canonical.dumps(end) + b"\n"
    with pytest.raises(FormatError, match=says):
        exportfile.parse(data, source="f")
    path = tmp_path / "f.agx"
    path.write_bytes(data)
    with pytest.raises(FormatError, match=says):
        exportfile.stream(path)

"""The view page's data: JSON escaped for a script element, records packed into chunks and
an execution index (issue 23, section 3)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentsessions.cli.viewpage import embed
from agentsessions.cli.viewpage.records import Packer
from agentsessions.journal.format import canonical
from agentsessions.journal.format.records import Record

HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(2)> \"' & <!-- \u2028\u2029"


@given(st.text())
def test_escaped_json_parses_to_the_same_value_and_holds_no_markup_character(text: str) -> None:
    out = embed.dumps({"k": text, text: [text]})
    assert json.loads(out) == {"k": text, text: [text]}
    decoded = out.decode()
    assert not any(ch in decoded for ch in "<>&\u2028\u2029")


def test_hostile_text_cannot_end_its_script_element() -> None:
    out = embed.script_json("meta", embed.dumps({"text": HOSTILE}))
    assert out.count(b"</script>") == 1 and out.endswith(b"</script>\n")
    assert b"<img" not in out and b"<!--" not in out
    body = out.split(b">", 1)[1].rsplit(b"</script>", 1)[0]
    assert json.loads(body) == {"text": HOSTILE}


def test_an_element_id_is_ours_never_user_text() -> None:
    for bad in ('x" onload="y', "", "é"):
        try:
            embed.script_json(bad, b"1")
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad!r}")


def _records(events: list[dict[str, Any]]) -> list[Record]:
    out, prev = [], ""
    for seq, event in enumerate(events, 1):
        record = Record.seal(canonical.canonical_json(event), seq=seq, prev_hash=prev, fence=1)
        out.append(record)
        prev = record.content_hash
    return out


def _msg(kind: str, role: str, text: str, x: str = "e1") -> dict[str, Any]:
    return {"kind": kind, "execution_id": x,
            "message": {"role": role, "parts": [{"text": {"text": text}}]}}  # fmt: skip


TURN = [
    {"kind": "EVENT_EXECUTION_START", "execution_id": "e1", "ts": "2026-12-01T10:00:00Z",
     "execution_start": {"harness": "chat", "input_count": "1"}},
    _msg("EVENT_INPUT", "user", HOSTILE),
    {"kind": "EVENT_MODEL_CALL", "execution_id": "e1", "model": {"model": "m", "id": "c1"}},
    {"kind": "EVENT_USAGE", "execution_id": "e1",
     "usage": {"model": "m", "input_tokens": "12", "output_tokens": "3"}},
    {"kind": "EVENT_TOOL_CALL", "execution_id": "e1", "tool": {"id": "t1", "tool": "notes"}},
    {"kind": "EVENT_APPROVAL_REQUEST", "execution_id": "e1", "approval": {"tool_call_id": "t1"}},
    {"kind": "EVENT_APPROVAL_RESULT", "execution_id": "e1", "actor": {"principal": "bob"},
     "approval_result": {"tool_call_id": "t1", "approved": False, "request_seq": "6"}},
    {"kind": "EVENT_ERROR", "execution_id": "e1", "error": {"code": 8, "description": "x"}},
    {"kind": "EVENT_END", "execution_id": "e1", "end": {"state": "FAILED"}},
    {"kind": "EVENT_LIFECYCLE", "lifecycle": {"kind": "LIFECYCLE_SUSPEND"}},
    {"kind": "EVENT_LIFECYCLE", "lifecycle": {"kind": "LIFECYCLE_RESUME"}},
    {"kind": "EVENT_EXECUTION_START", "execution_id": "e2", "execution_start": {}},
    {"kind": "EVENT_OUTPUT", "execution_id": "e2", "message": {"role": "assistant", "parts": [
        {"data": {"data": {"compaction": {"from_seq": 1, "to_seq": 9, "tokens_saved": 40}}}}]}},
    {"kind": "EVENT_USAGE", "execution_id": "e2", "usage": {"input_tokens": "5"}},
]  # fmt: skip


def test_the_index_has_one_row_per_run_of_an_execution_with_its_flags_and_tokens() -> None:
    chunks: list[tuple[int, bytes]] = []
    packer = Packer(lambda n, body: chunks.append((n, body)), chunk_records=4)
    records = _records(TURN)
    packer.feed(records)
    packed = packer.finish()
    assert [(g["x"], g["a"], g["b"], g["s"]) for g in packed.groups] == [
        ("e1", 1, 9, "FAILED"), ("", 10, 10, ""), ("", 11, 11, ""), ("e2", 12, 14, ""),
    ]  # fmt: skip
    first = packed.groups[0]
    assert first["t"] == "2026-12-01T10:00:00Z"  # the first record's time, where recorded
    assert first["h"] == "chat" and first["p"] == HOSTILE and (first["m"], first["k"]) == (1, 1)
    assert first["u"] == [12, 3, 0] and first["f"] == ["approval", "denied", "error"]
    assert packed.groups[1]["f"] == ["suspend"] and packed.groups[3]["f"] == ["compaction"]
    assert packed.usage == {"input_tokens": 17, "output_tokens": 3, "reasoning_tokens": 0}
    assert packed.usage_records == 2 and packed.records == 14
    assert packed.chunks == [[1, 4], [5, 4], [9, 4], [13, 2]]
    assert packed.text_bytes == sum(len(r.to_wire_json()) + 1 for r in records)
    rows = [row for _, body in chunks for row in json.loads(body)]
    assert [(s, h) for s, h, _ in rows] == [(r.seq, r.content_hash) for r in records]
    assert [e for _, _, e in rows] == TURN  # the stored events, unchanged
    assert all(b"<" not in body and b"\xe2\x80\xa8" not in body for _, body in chunks)

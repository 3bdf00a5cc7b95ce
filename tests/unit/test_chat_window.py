"""The chat harness's one-pass window (``plain_conversation``) builds exactly the messages
of the general path (compaction markers, the drop filter, tool pairing) for any window."""

from __future__ import annotations

import base64
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import agentsessions.v1.compaction as compaction
from agentsessions.controller.history import ListHistory
from agentsessions.controller.spi import Start
from agentsessions.v1 import construct
from harnesses.chat import ChatConfig, build_messages, conversation, plain_conversation


def _start(config: dict[str, Any] | None, xid: str) -> dict[str, Any]:
    raw = json.dumps(config).encode() if config is not None else b""
    return construct.execution_start(input_count=1, config=raw, harness="chat", execution_id=xid)


def _text(kind: str, role: str, text: str) -> dict[str, Any]:
    return construct.event(kind, execution_id="x", message=construct.text_message(role, text))


_TOOL_CALL = {"role": "assistant", "parts": [{"tool_call": {"id": "c1", "tool": "t"}}]}
_EVENTS = [
    _start(None, "a"),
    _start({"system_prompt": "be brief"}, "b"),  # a config that is no compaction
    _start({"compact": {"keep_turns": 1}}, "c"),  # a compaction's START
    _text("EVENT_INPUT", "user", "hello <b>"),
    _text("EVENT_INPUT", "", "no role"),
    _text("EVENT_OUTPUT", "assistant", "hi"),
    _text("EVENT_OUTPUT", "user", "an output that says user"),
    construct.event("EVENT_OUTPUT", execution_id="c", message=_TOOL_CALL),
    construct.event("EVENT_OUTPUT", execution_id="c", message=compaction.marker_message(1, 3, 9)),
    {"kind": "EVENT_TOOL_RESULT", "execution_id": "x", "result": {"id": "c1"}},
    construct.model_call_event("m", input_hash="0" * 64, call_id="k", execution_id="x"),
    construct.end_event("COMPLETED", execution_id="x"),
    {"kind": "EVENT_INPUT", "execution_id": "x"},  # no message
]


@given(st.lists(st.sampled_from(range(len(_EVENTS))), max_size=24))
@settings(max_examples=400)
def test_the_one_pass_window_builds_what_the_general_path_builds(picks: list[int]) -> None:
    events = [_EVENTS[i] for i in picks]
    start = Start("e" * 16, b"", ({"role": "user", "parts": [{"text": {"text": "now"}}]},),
                  ListHistory(events))  # fmt: skip
    cfg = ChatConfig()
    pairs = list(enumerate(events[-cfg.history_events :], max(1, len(events) - 49)))
    general = build_messages(cfg, start, events=pairs)  # the general path, always
    assert build_messages(cfg, start) == general
    plain = plain_conversation(events)
    if plain is not None:  # plain: the general pieces find nothing to drop or pair
        assert plain == conversation(events)
        assert compaction.markers(list(enumerate(events, 1))) == (set(), None)


def test_a_window_with_a_marker_or_a_tool_result_is_not_plain() -> None:
    assert plain_conversation([_EVENTS[3], _EVENTS[5]]) is not None
    assert plain_conversation([_EVENTS[1], _EVENTS[3]]) is not None  # a chat config
    for odd in (2, 7, 8, 9):
        assert plain_conversation([_EVENTS[3], _EVENTS[odd]]) is None, odd
    config = base64.b64decode(_EVENTS[2]["execution_start"]["config"])
    assert b"compact" in config  # the compaction START really is one

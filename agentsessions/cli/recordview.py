"""Records and events as people read them: one line each, for ``log``, ``follow``, a turn.

An event's body is summarised on one line (``user: hello``, ``model call echo``, ``END
COMPLETED``), escaped by :func:`~agentsessions.cli.render.one_line` and clipped; ``log``
prints aligned lines as it reads (a table is measured whole before its first row is drawn),
the demo draws :func:`log_table`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from agentsessions.cli.render import SUMMARY_WIDTH, clip, one_line, plain_table

if TYPE_CHECKING:
    from rich.table import Table

    from agentsessions.sessions.values import LogRecord


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _part_text(part: Mapping[str, Any]) -> str:
    if "text" in part:
        return str(part["text"].get("text", ""))
    if "file" in part:
        file = part["file"]
        return f"[file {file.get('name') or file.get('mime') or file.get('uri') or ''}]".replace(
            " ]", "]"
        )
    if "data" in part:
        return f"[data {_compact(part['data'].get('data', {}))}]"
    if "reasoning" in part:
        return "[reasoning]"
    if "tool_call" in part:
        return f"[tool call {part['tool_call'].get('tool', '')}]"
    if "tool_result" in part:
        return f"[tool result {part['tool_result'].get('id', '')}]"
    return "[?]"


def _message(body: Mapping[str, Any]) -> str:
    text = " ".join(_part_text(p) for p in body.get("parts", []))
    return f"{body.get('role', '?')}: {text}"


def _model(body: Mapping[str, Any]) -> str:
    out = f"model call {body.get('model', '')}".rstrip()
    return out + (f" id={body['id']}" if body.get("id") else "")


def _tool(body: Mapping[str, Any]) -> str:
    return f"tool call {body.get('tool', '')}({_compact(body.get('args', {}))})"


def _result(body: Mapping[str, Any]) -> str:
    head = f"tool result {body.get('id', '')}:"
    if body.get("is_error"):
        return f"{head} error: {body.get('error', '')}"
    if "output" in body:
        return f"{head} {_compact(body['output'])}"
    return f"{head} " + " ".join(_part_text(p) for p in body.get("content", []))


def _approval(body: Mapping[str, Any]) -> str:
    reason = body.get("reason", "")
    return f"approval requested for {body.get('tool_call_id', '')}" + (
        f": {reason}" if reason else ""
    )


def _approval_result(body: Mapping[str, Any]) -> str:
    verdict = "approved" if body.get("approved") else "denied"
    reason = body.get("reason", "")
    return f"{verdict} {body.get('tool_call_id', '')}" + (f": {reason}" if reason else "")


def _usage(body: Mapping[str, Any]) -> str:
    out = f"usage {body.get('model', '')}: in={body.get('input_tokens', '0')}"
    out += f" out={body.get('output_tokens', '0')}"
    if body.get("reasoning_tokens"):
        out += f" reasoning={body['reasoning_tokens']}"
    return out


def _lifecycle(body: Mapping[str, Any]) -> str:
    kind = str(body.get("kind", "LIFECYCLE_UNSPECIFIED")).removeprefix("LIFECYCLE_")
    return f"{kind} {body.get('detail', '')}".rstrip()


def _end(body: Mapping[str, Any]) -> str:
    error = body.get("error", {})
    out = f"END {body.get('state', '')}".rstrip()
    return out + (f": {error.get('description', '')}" if error else "")


def _error(body: Mapping[str, Any]) -> str:
    return f"error {body.get('code', 0)}: {body.get('description', '')}"


def _execution_start(body: Mapping[str, Any]) -> str:
    out = f"start harness={body.get('harness') or '-'}"
    if "input_count" in body:
        out += f" inputs={body['input_count']}"
    if body.get("resume_from_seq"):
        out += f" resume_from={body['resume_from_seq']}"
    return out


def _parked(body: Mapping[str, Any]) -> str:
    return f"parked awaiting approval of {body.get('tool_call_id', '')}"


_SUMMARIES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "message": _message,
    "model": _model,
    "tool": _tool,
    "result": _result,
    "approval": _approval,
    "approval_result": _approval_result,
    "usage": _usage,
    "lifecycle": _lifecycle,
    "end": _end,
    "error": _error,
    "execution_start": _execution_start,
    "parked": _parked,
}


def event_kind(event: Mapping[str, Any]) -> str:
    """The event's kind without the ``EVENT_`` prefix (``INPUT``, ``MODEL_CALL``, ``END``...)."""
    return str(event.get("kind", "EVENT_KIND_UNSPECIFIED")).removeprefix("EVENT_")


def summarize_event(event: Mapping[str, Any], width: int = SUMMARY_WIDTH) -> str:
    """A one-line reading of an event's body: ``user: hello``, ``model call echo``, ``END ...``."""
    actor = event.get("actor")
    by = f"[{_who(actor)}] " if isinstance(actor, Mapping) else ""  # an input's author
    for key, summarize in _SUMMARIES.items():
        body = event.get(key)
        if isinstance(body, Mapping):
            return clip(by + summarize(body), width)
    return clip(by.rstrip(), width)


def _who(actor: Mapping[str, Any]) -> str:
    """An event's actor as ``log`` names it: its principal (else its subject), and issuer."""
    name = str(actor.get("principal") or actor.get("subject") or "?")
    issuer = actor.get("issuer")
    return f"{name}@{issuer}" if issuer else name


def log_table(records: Iterable[LogRecord]) -> Table:
    """Records as a table: seq, kind, execution id, short hash and a summary of the body."""
    from rich.text import Text

    table = plain_table()
    table.add_column("seq", justify="right", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("execution", no_wrap=True)
    table.add_column("hash", no_wrap=True)
    table.add_column("summary", overflow="fold")
    for record in records:
        event = record.event
        table.add_row(
            str(record.seq),
            Text(one_line(event_kind(event))),
            Text(one_line(str(event.get("execution_id", ""))) or "-"),
            record.content_hash[:12],
            Text(summarize_event(event)),
        )
    return table


LOG_HEADER = f"{'seq':>6}  {'kind':<16}  {'execution':<16}  {'hash':<12}  summary"
"""``log``'s header: fixed column widths, so each row prints as soon as it is read."""


def log_line(record: LogRecord) -> str:
    """One record as ``log`` and ``follow`` show it, on one line: seq, kind, execution,
    short hash and a summary of the body, in :data:`LOG_HEADER`'s columns."""
    event = record.event
    kind = one_line(event_kind(event))
    execution = one_line(str(event.get("execution_id", ""))) or "-"
    line = f"{record.seq:>6}  {kind:<16}  {execution:<16}  {record.content_hash[:12]:<12}  "
    return (line + summarize_event(event)).rstrip()


def print_log(records: Iterable[LogRecord]) -> int:
    """Print ``log``'s rows as they are read (a header first); returns how many were shown.

    Plain aligned lines, not a rich table: a table is measured whole before its first row
    is drawn, which kept a 15,000-record log silent for seconds (bench/log.py).
    """
    out = sys.stdout
    shown = 0
    for record in records:
        if not shown:
            out.write(LOG_HEADER + "\n")
        out.write(log_line(record) + "\n")
        shown += 1
    if not shown:
        out.write("no records in that range\n")
    return shown

"""What the CLI prints: rich tables and progress for people, JSON for programs.

Invariants:
- ``--json`` output goes to stdout through :func:`write_json` / :func:`write_json_lines` only,
  never through rich, so it is never wrapped, coloured or markup-interpreted;
- user data shown by rich is passed as :class:`rich.text.Text`, never as markup, so a session
  name like ``[bold]`` prints as typed;
- no human-readable output carries a raw control or format character from user data (names,
  labels, annotations, message text, verify reasons): :func:`one_line` escapes C0, DEL, C1,
  bidi overrides and every other non-printable character as ``\x1b``/``\u202e``, so a
  journal cannot clear the screen, retitle the terminal or reorder what a reader sees;
  ``--json`` stays byte-exact;
- diagnostics (progress bars, narration of long work) go to stderr.

rich is imported inside the functions that draw, so JSON output and error lines never pay
for it (start-up matters for a command line); ``list`` and ``get`` written to a pipe, where
rich would only pad columns, are written without it (:func:`plain_page`,
:func:`plain_details`: the same bytes).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID
    from rich.table import Table
    from rich.text import Text

    from agentsessions.sessions.api import LogRecord, Session, SessionPage, VerifyReport

SUMMARY_WIDTH = 72
PROGRESS_MIN_TOTAL = 5_000
"""Work shorter than this many records finishes before a bar would be worth drawing."""


WIDE = 100
"""Terminals at least this wide get every column of ``list``."""
PIPE_WIDTH = 200
"""Width of tables written to a pipe or file (no terminal to wrap for, unless COLUMNS says)."""


def _width(stream: Any) -> int | None:
    """None (let rich ask the terminal or COLUMNS) on a terminal, a wide page on a pipe."""
    isatty = getattr(stream, "isatty", None)
    if os.environ.get("COLUMNS") or (isatty is not None and isatty()):
        return None
    return PIPE_WIDTH


def stdout_console() -> Console:
    """A console on the current ``sys.stdout`` (re-read on each call, so test runners work)."""
    from rich.console import Console

    return Console(file=sys.stdout, highlight=False, soft_wrap=False, width=_width(sys.stdout))


def stderr_console() -> Console:
    """A console on the current ``sys.stderr`` for diagnostics and narration."""
    from rich.console import Console

    return Console(file=sys.stderr, highlight=False, soft_wrap=False, width=_width(sys.stderr))


def emit(console: Console, renderable: Any) -> None:
    """Print ``renderable``; to a pipe or a file, without the spaces rich pads each line of a
    table with (a terminal gets it as is)."""
    if console.is_terminal:
        console.print(renderable)
        return
    with console.capture() as captured:
        console.print(renderable)
    console.file.write("\n".join(line.rstrip() for line in captured.get().split("\n")))


def plain_table() -> Table:
    """A borderless table with a bold header and two spaces between columns."""
    from rich.table import Table

    return Table(box=None, header_style="bold", padding=(0, 2, 0, 0), pad_edge=False)


# --- JSON ----------------------------------------------------------------------------------


def write_json(obj: Any, *, compact: bool = False) -> None:
    """Write one JSON document (indented, or on one line if ``compact``) to stdout."""
    indent, separators = (None, (",", ":")) if compact else (2, None)
    text = json.dumps(obj, indent=indent, separators=separators, ensure_ascii=False, default=str)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def write_json_lines(lines: Iterable[bytes]) -> None:
    """Write already-encoded JSON documents to stdout, one per line, byte for byte."""
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    for line in lines:
        if buffer is not None:
            buffer.write(line + b"\n")
        else:  # a text-only stream (rare): decode, the bytes are UTF-8 JSON
            sys.stdout.write(line.decode("utf-8") + "\n")
    if buffer is not None:
        buffer.flush()
    sys.stdout.flush()


# --- errors --------------------------------------------------------------------------------


def one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped, so it stays one line.

    Everything ``str.isprintable`` rejects is escaped: C0 and C1 controls, DEL, format
    characters (bidi overrides and isolates, zero-width joiners) and separators other than
    the space. The one helper for every human-readable line the CLI prints.
    """
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)


def error_text(message: str, hint: str = "") -> str:
    """The CLI's error report: one line, plus a short hint line when there is a hint."""
    out = f"agentsessions: error: {one_line(message)}\n"
    if hint:
        out += f"  hint: {one_line(hint)}\n"
    return out


# --- sessions ------------------------------------------------------------------------------


def short_state(value: str, prefix: str) -> str:
    """``COMPUTE_LIVE`` -> ``LIVE``: enum names without their common prefix."""
    return value.removeprefix(prefix) or "-"


def format_time_ns(time_ns: int) -> str:
    """A nanosecond Unix time as ``YYYY-MM-DD HH:MM:SSZ`` (UTC), or ``-`` when unset."""
    if time_ns <= 0:
        return "-"
    when = datetime.fromtimestamp(time_ns / 1e9, tz=UTC)
    return when.strftime("%Y-%m-%d %H:%M:%SZ")


def format_pairs(pairs: Mapping[str, str]) -> str:
    """Labels or annotations as ``k=v, k2=v2`` (sorted), or ``-`` when empty."""
    return one_line(", ".join(f"{k}={v}" for k, v in sorted(pairs.items()))) or "-"


SESSION_COLUMNS = ("uid", "name", "harness", "last_seq", "compute", "exec", "created")
"""The columns of ``list``, in order (``created`` only on a wide page)."""
_MIN_WIDTHS = (29, 4, 4, 0, 0, 0, 0)
_RIGHT = frozenset({3})  # last_seq is right-justified


def session_cells(info: Session, with_created: bool) -> list[str]:
    """The cells of a readable session's ``list`` row, as text (see :func:`sessions_table`)."""
    return [
        one_line(info.uid),
        one_line(info.name) or "-",
        one_line(info.harness) or "-",
        str(info.last_seq),
        short_state(info.compute_state, "COMPUTE_"),
        short_state(info.exec_state, "EXEC_"),
        *([format_time_ns(info.create_time_ns)] if with_created else []),
    ]


def sessions_table(sessions: Sequence[Session], width: int | None = None) -> Table:
    """One page of sessions as a table: uid, name, harness, last seq, states, created.

    uid, seq and states never wrap; on a terminal narrower than :data:`WIDE` columns the
    ``created`` column is left out (``get`` and ``--json`` still show it).
    """
    from rich.text import Text

    with_created = width is None or width >= WIDE
    rows: list[list[Text | str]] = []
    for info in sessions:
        if info.damaged:
            rows.append(damaged_row(info, with_created))
            continue
        cells = session_cells(info, with_created)
        rows.append([Text(cells[0]), Text(cells[1]), Text(cells[2]), *cells[3:]])
    table = plain_table()
    table.add_column("uid", no_wrap=True, min_width=29)
    table.add_column("name", overflow="fold", min_width=4)
    table.add_column("harness", overflow="fold", min_width=4)
    table.add_column("last_seq", justify="right", no_wrap=True)
    table.add_column("compute", no_wrap=True)
    table.add_column("exec", no_wrap=True)
    if with_created:
        table.add_column("created", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return table


def _plain(text: str) -> bool:
    """True if rich prints ``text`` unchanged, one cell per character (printable ASCII)."""
    return text.isascii() and text.isprintable()


def plain_page(sessions: Sequence[Session], width: int) -> str | None:
    """``list``'s table as rich draws it off a terminal, without importing rich, or None
    when rich would have more to do than pad columns: a damaged row (styled), a character
    that is not printable ASCII (cell widths, escapes), a row wider than ``width`` (wrap).

    Same bytes as :func:`emit` of :func:`sessions_table` (held by tests/unit/test_plain_pages):
    each column as wide as its widest cell (or its minimum), two spaces between columns,
    last_seq right-justified, no trailing spaces.
    """
    with_created = width >= WIDE
    columns = len(SESSION_COLUMNS) - (0 if with_created else 1)
    rows = [list(SESSION_COLUMNS[:columns])]
    for info in sessions:
        if info.damaged:
            return None
        rows.append(session_cells(info, with_created))
    # the non-Text cells (seq, states, time) go through rich's markup: keep them literal
    if any("[" in cell for row in rows[1:] for cell in row[3:]):
        return None
    if not all(_plain(cell) for row in rows for cell in row):
        return None
    widths = [max(_MIN_WIDTHS[i], *(len(row[i]) for row in rows)) for i in range(columns)]
    if sum(widths) + 2 * (columns - 1) > width:
        return None
    lines = [
        "  ".join(
            cell.rjust(widths[i]) if i in _RIGHT else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ).rstrip()
        for row in rows
    ]
    return "\n".join(lines) + "\n"


def damaged_row(info: Session, with_created: bool) -> list[Text | str]:
    """The ``list`` row of a session that cannot be read: its uid and why, in the name
    column, so that it is reported, not hidden (nothing else about it can be trusted)."""
    from rich.text import Text

    created = [format_time_ns(info.create_time_ns)] if with_created else []
    return [
        Text(info.uid),
        Text(f"damaged: {info.damaged}", style="bold red", no_wrap=True, overflow="ellipsis"),
        "-",
        "-",
        "-",
        "-",
        *created,
    ]


def print_page(page: SessionPage, project: str) -> None:
    """Print one page of ``list`` and, when there is one, the command for the next page.

    To a pipe or a file, a page rich would only pad is written directly (:func:`plain_page`):
    ``agentsessions list | ...`` in a loop does not import rich for each call.
    """
    if _print_plain_page(page, project):
        return
    from rich.text import Text

    console = stdout_console()
    if not page.sessions:
        console.print(Text(one_line(f"no sessions in project {project!r}")))
    else:
        emit(console, sessions_table(page.sessions, console.width))
    if page.next_cursor:
        console.print(
            Text(f"next page: agentsessions list --project {project} --cursor {page.next_cursor}"),
            soft_wrap=True,
        )


def _print_plain_page(page: SessionPage, project: str) -> bool:
    """Write ``page`` without rich if that gives rich's bytes; False if rich must draw it."""
    width = _width(sys.stdout)
    if width is None:  # a terminal (or COLUMNS): rich wraps and styles for it
        return False
    if page.sessions:
        text = plain_page(page.sessions, width)
    else:
        empty = one_line(f"no sessions in project {project!r}")
        text = empty + "\n" if _plain(empty) and len(empty) <= width else None
    if text is None:
        return False
    if page.next_cursor:
        more = f"next page: agentsessions list --project {project} --cursor {page.next_cursor}"
        if not _plain(more):
            return False
        text += more + "\n"
    sys.stdout.write(text)
    return True


def session_rows(info: Session, memory: str = "", usage: str = "") -> list[tuple[str, str]]:
    """``get``'s (field, value) rows, values on one line (see :func:`session_details`)."""
    meta = info
    rows: list[tuple[str, str]] = [
        ("uid", info.uid),
        ("project", meta.project),
        ("name", meta.name or "-"),
        ("harness", meta.harness or "-"),
        ("model", meta.model or "-"),
        ("labels", format_pairs(meta.labels)),
        ("annotations", format_pairs(meta.annotations)),
        ("last_seq", str(info.last_seq)),
        ("last_hash", info.last_hash or "-"),
        ("compute", short_state(info.compute_state, "COMPUTE_")),
        ("exec", short_state(info.exec_state, "EXEC_")),
        *([("memory", memory)] if memory else []),
        *([("usage", usage)] if usage else []),
        ("fence", str(info.fence)),
        ("created", format_time_ns(meta.create_time_ns)),
        ("updated", format_time_ns(info.update_time_ns)),
    ]
    if meta.parent_uid:
        rows.append(("parent", f"{meta.parent_uid} at seq {meta.fork_seq}"))
    if info.state_version:
        first, last = info.state_covers
        rows.append(
            ("state", f"version {info.state_version}, covers {first}..{last}, {info.state_size} B")
        )
    ref = info.pending_approval
    if ref is not None:
        rows.append(
            (
                "awaiting",
                f"approval of call {ref.tool_call_id} (execution "
                f"{ref.execution_id}, request seq {ref.request_seq}): approve/deny",
            )
        )
    unresolved = info.unresolved_call
    if unresolved is not None:
        rows.append(
            (
                "unresolved",
                f"tool call {unresolved.tool_call_id} ({unresolved.tool}, key "
                f"{unresolved.idempotency_key}, seq {unresolved.call_seq}, execution "
                f"{unresolved.execution_id}): outcome unknown; resolve --call "
                f"{unresolved.tool_call_id} --result JSON | --failed REASON",
            )
        )
    if info.deleted:
        rows.append(("deleted", "yes (read-only: get, log and verify still work)"))
    return [(key, one_line(value)) for key, value in rows]


def session_details(info: Session, memory: str = "", usage: str = "") -> Table:
    """A session's metadata and projections as a two-column table (``memory``: where the
    harness's memory lives, from :func:`agentsessions.runtimes.compute.memory_status`)."""
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for key, value in session_rows(info, memory, usage):
        grid.add_row(key, Text(value))
    return grid


def plain_details(rows: Sequence[tuple[str, str]], width: int) -> str | None:
    """``get``'s grid as rich draws it off a terminal, without rich, or None when rich has
    more to do than pad the first column (a value that is not printable ASCII, or too long
    for ``width``). Same bytes as :func:`emit` of :func:`session_details`."""
    if not all(_plain(key) and _plain(value) for key, value in rows):
        return None
    key_width = max(len(key) for key, _ in rows)
    if key_width + 2 + max(len(value) for _, value in rows) > width:
        return None
    return "".join(f"{key.ljust(key_width)}  {value}".rstrip() + "\n" for key, value in rows)


def print_session(info: Session, memory: str = "", usage: str = "") -> None:
    """Print ``get``'s human view of one session (to a pipe, without rich when it can)."""
    width = _width(sys.stdout)
    rows = session_rows(info, memory, usage)
    text = None if width is None else plain_details(rows, width)
    if text is not None:
        sys.stdout.write(text)
        return
    emit(stdout_console(), session_details(info, memory, usage))


# --- log -----------------------------------------------------------------------------------


def clip(text: str, width: int = SUMMARY_WIDTH) -> str:
    """``text`` on one line, whitespace collapsed, other controls escaped (:func:`one_line`),
    cut to ``width`` characters with an ellipsis."""
    flat = one_line(" ".join(text.split()))
    return flat if len(flat) <= width else flat[: width - 1] + "…"


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
    for key, summarize in _SUMMARIES.items():
        body = event.get(key)
        if isinstance(body, Mapping):
            return clip(summarize(body), width)
    return ""


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


# --- verify --------------------------------------------------------------------------------


def verify_line(report: VerifyReport, label: str) -> Text:
    """One line per verified chain: a check mark and the head, or a cross and the first bad seq."""
    from rich.text import Text

    if report.ok:
        head = report.last_hash[:16] or "-"
        line = Text.assemble(("✓ ", "green"))
        noun = "record" if report.records == 1 else "records"
        line.append(one_line(f"{label}: {report.records} {noun} verified"))
        line.append(f", last seq {report.last_seq}")
        line.append(f", head {head}")
        if any("content hashes not recomputed" in note for note in report.notes):
            line.append(" (encrypted, checked without the key: content hashes not recomputed)")
        if report.torn_tail:
            line.append(" (a torn, unacknowledged tail was ignored)")
        return line
    line = Text.assemble(("✗ ", "bold red"))
    where = f" at seq {report.first_bad_seq}" if report.first_bad_seq is not None else ""
    line.append(one_line(f"{label}: FAILED{where}: {report.reason}"))
    return line


def print_verify(reports: Sequence[tuple[str, VerifyReport]]) -> None:
    """Print one verify line per (label, report)."""
    from rich.text import Text

    console = stdout_console()
    if not reports:
        console.print(Text("no sessions to verify"))
    for label, report in reports:
        console.print(verify_line(report, label), soft_wrap=True)
        for name, part in report.components:  # the session's tool stores, one line each
            console.print(verify_line(part, f"{label} tool store {name}"), soft_wrap=True)


# --- export --------------------------------------------------------------------------------


def print_export(summary: Mapping[str, Any]) -> None:
    """Print ``export``'s one-line summary: records, head, file and whether it is compressed."""
    from rich.text import Text

    kind = "zstd" if summary.get("compressed") else "uncompressed"
    head = str(summary.get("last_hash", ""))[:16] or "-"
    line = (
        f"exported {summary.get('uid')}: {summary.get('records')} records, last seq "
        f"{summary.get('last_seq')}, head {head} -> {summary.get('path')} ({kind})"
    )
    stdout_console().print(Text(one_line(line)), soft_wrap=True)


# --- progress ------------------------------------------------------------------------------


class ProgressBar:
    """A ``progress(done, total)`` callback drawing a rich bar on stderr for long work.

    The bar appears only when stderr is a terminal and ``total`` reaches ``min_total``
    records, so pipes, logs and short journals stay quiet.
    """

    def __init__(
        self, description: str, *, min_total: int = PROGRESS_MIN_TOTAL, enabled: bool | None = None
    ) -> None:
        self.description = description
        self.min_total = min_total
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self, done: int, total: int) -> None:
        """Record that ``done`` of ``total`` units are finished."""
        if not self.enabled:
            return
        if self._progress is None:
            if total < self.min_total:
                return
            self._start(total)
        assert self._progress is not None and self._task is not None
        self._progress.update(self._task, completed=done, total=total)

    def _start(self, total: int) -> None:
        from rich.progress import Progress

        self._progress = Progress(console=stderr_console(), transient=True)
        self._progress.start()
        self._task = self._progress.add_task(self.description, total=total)

    def relabel(self, description: str) -> None:
        """Change the text beside the bar (for example, the next session of ``verify --all``)."""
        self.description = description
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, description=description, completed=0)

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

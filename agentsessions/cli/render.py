"""How the CLI prints: JSON for programs, consoles, progress and error lines for people.

What each command draws lives beside it or in a view module (:mod:`.sessionview`,
:mod:`.recordview`, :mod:`.turnview`); these are the primitives they share.

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
for it (start-up matters for a command line); to a pipe or a file, :func:`page_width` gives
a wide page, so a view can write what rich would only pad without importing it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID
    from rich.table import Table

SUMMARY_WIDTH = 72
"""How many characters of a summary :func:`clip` keeps by default."""
PROGRESS_MIN_TOTAL = 5_000
"""Work shorter than this many records finishes before a bar would be worth drawing."""
PIPE_WIDTH = 200
"""Width of tables written to a pipe or file (no terminal to wrap for, unless COLUMNS says)."""


def page_width(stream: Any) -> int | None:
    """None (let rich ask the terminal or COLUMNS) on a terminal, a wide page on a pipe."""
    isatty = getattr(stream, "isatty", None)
    if os.environ.get("COLUMNS") or (isatty is not None and isatty()):
        return None
    return PIPE_WIDTH


def stdout_console() -> Console:
    """A console on the current ``sys.stdout`` (re-read on each call, so test runners work)."""
    from rich.console import Console

    return Console(file=sys.stdout, highlight=False, soft_wrap=False, width=page_width(sys.stdout))


def stderr_console() -> Console:
    """A console on the current ``sys.stderr`` for diagnostics and narration."""
    from rich.console import Console

    return Console(file=sys.stderr, highlight=False, soft_wrap=False, width=page_width(sys.stderr))


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


def print_uid_or_json(as_json: bool, uid: str, obj: dict[str, Any]) -> None:
    """A new session's uid on stdout, or (``--json``) its JSON document."""
    if as_json:
        write_json(obj)
    else:
        sys.stdout.write(uid + "\n")


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


# --- values --------------------------------------------------------------------------------


def format_time_ns(time_ns: int) -> str:
    """A nanosecond Unix time as ``YYYY-MM-DD HH:MM:SSZ`` (UTC), or ``-`` when unset."""
    if time_ns <= 0:
        return "-"
    when = datetime.fromtimestamp(time_ns / 1e9, tz=UTC)
    return when.strftime("%Y-%m-%d %H:%M:%SZ")


def clip(text: str, width: int = SUMMARY_WIDTH) -> str:
    """``text`` on one line, whitespace collapsed, other controls escaped (:func:`one_line`),
    cut to ``width`` characters with an ellipsis."""
    flat = one_line(" ".join(text.split()))
    return flat if len(flat) <= width else flat[: width - 1] + "…"


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

"""What ``list`` and ``get`` draw: a page of sessions, one session's details.

To a terminal, rich tables; to a pipe or a file, where rich would only pad columns, the same
bytes written without importing rich (:func:`plain_page`, :func:`plain_details`; held by
tests/unit/test_plain_pages.py), so ``agentsessions list | ...`` in a loop stays cheap. User
data is passed to rich as :class:`rich.text.Text`, never as markup, and escaped by
:func:`~agentsessions.cli.render.one_line`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from agentsessions.cli.provenance import describe_identity, describe_origin
from agentsessions.cli.render import (
    emit,
    format_time_ns,
    one_line,
    page_width,
    plain_table,
    stdout_console,
)

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from agentsessions.sessions.values import Session, SessionPage

WIDE = 100
"""Terminals at least this wide get every column of ``list``."""


def short_state(value: str, prefix: str) -> str:
    """``COMPUTE_LIVE`` -> ``LIVE``: enum names without their common prefix."""
    return value.removeprefix(prefix) or "-"


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
    if print_plain_page(page, project):
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


def print_plain_page(page: SessionPage, project: str) -> bool:
    """Write ``page`` without rich if that gives rich's bytes; False if rich must draw it."""
    width = page_width(sys.stdout)
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
        *([("origin", describe_origin(meta.origin))] if meta.origin else []),
        *([("identity", describe_identity(meta.identity))] if meta.identity else []),
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
    width = page_width(sys.stdout)
    rows = session_rows(info, memory, usage)
    text = None if width is None else plain_details(rows, width)
    if text is not None:
        sys.stdout.write(text)
        return
    emit(stdout_console(), session_details(info, memory, usage))

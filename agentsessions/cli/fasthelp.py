"""The root ``--help`` page without typer: drawn from the values :mod:`.helpgen` wrote out.

The page is typer's, byte for byte (tests/unit/test_fasthelp.py draws both), but costs
no typer import and no command built. To a terminal (or wherever colour is asked for) rich
draws it from :mod:`.gen.roothelp`; to a pipe or a file, where rich's output is plain text
whose shape depends on the width alone, :mod:`.plainhelp` lays out the same lines without
importing rich.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing's: importing typing costs a bare --help ~3 ms

if TYPE_CHECKING:
    from agentsessions.cli.plainhelp import Plain

COLOUR_VARIABLES = (
    "FORCE_COLOR",
    "PY_COLORS",
    "GITHUB_ACTIONS",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "_TYPER_FORCE_DISABLE_TERMINAL",
    "JUPYTER_COLUMNS",
)
"""Variables that can make rich (or typer's console) draw for a terminal: rich's to honour."""


def print_root_help() -> None:
    """Print the root command's help page on stdout, as ``agentsessions --help`` does."""
    from agentsessions.cli.gen import roothelp as values

    text = plain_page()
    if text is not None:
        sys.stdout.write(text)
        return
    from agentsessions.cli import helpdraw

    helpdraw.page(
        values.USAGE,
        values.HELP,
        values.DEPRECATED,
        values.OPTION_PANELS,
        values.COMMAND_PANELS,
        values.EPILOG,
    )


def plain_page() -> str | None:
    """The page as rich would print it to this stdout, when that is plain text this module
    lays out; None when rich must draw it."""
    from agentsessions.cli.gen import roothelp as values

    laid: Plain | None = values.PLAIN
    width = plain_width()
    if laid is None or width is None:
        return None
    from agentsessions.cli.plainhelp import page

    return page(width, *laid)


def plain_width() -> int | None:
    """The width rich would give this page on a stdout that is no terminal, or None when
    stdout may be one (or colour is forced, or the platform is not POSIX, or the encoding
    cannot show the panels' lines): then only rich knows."""
    if sys.platform == "win32" or any(name in os.environ for name in COLOUR_VARIABLES):
        return None
    stream = sys.stdout
    try:
        if stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    if not (getattr(stream, "encoding", None) or "utf-8").lower().startswith("utf"):
        return None
    forced = os.environ.get("TERMINAL_WIDTH")  # typer's console takes it as the width
    if forced is not None:
        return int(forced) if forced.isdigit() and int(forced) > 0 else None
    width = 0
    for fd in (0, 1, 2):  # rich.console.Console.size: the first terminal among 0, 1, 2
        try:
            width = os.get_terminal_size(fd).columns
            break
        except (AttributeError, ValueError, OSError):
            continue
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        width = int(columns)
    return width or 80

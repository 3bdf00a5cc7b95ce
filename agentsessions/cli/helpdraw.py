"""A ``--help`` page drawn from plain values: typer's rich layout, without typer.

:mod:`.helpview` turns a built click command into the values a page shows (the usage line,
the prose, one :data:`Row` per option or argument, the commands' names and summaries);
this module draws them on rich's core exactly as ``typer.rich_utils.rich_format_help``
does in its ``"rich"`` markup mode (a port of its MIT code, from rich-click). Because the
values are plain, a page whose values are known without building the command (the root's:
:mod:`.fasthelp`) is drawn without importing typer at all.

Invariants: importing this module imports neither typer nor rich (rich loads when a page is
drawn); the bytes are typer's, plain and coloured (tests/unit/test_helpview.py).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from functools import cache
from gettext import gettext as _
from os import getenv
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.highlighter import RegexHighlighter
    from rich.table import Table
    from rich.text import Text

# typer.rich_utils' styles and strings, as that module sets them (typer 0.28)
STYLE_OPTION = "bold cyan"
STYLE_SWITCH = "bold green"
STYLE_NEGATIVE_OPTION = "bold magenta"
STYLE_NEGATIVE_SWITCH = "bold red"
STYLE_TYPES = "bold yellow"
STYLE_TYPES_SEPARATOR = "dim"
STYLE_USAGE = "yellow"
STYLE_USAGE_COMMAND = "bold"
STYLE_DEPRECATED = "red"
STYLE_DEPRECATED_COMMAND = "dim"
STYLE_HELPTEXT = "dim"
STYLE_OPTION_DEFAULT = "dim"
STYLE_OPTION_ENVVAR = "dim yellow"
STYLE_REQUIRED_SHORT = "red"
STYLE_REQUIRED_LONG = "dim red"
STYLE_PANEL_BORDER = "dim"
STYLE_COMMANDS_TABLE_FIRST_COLUMN = "bold cyan"
DEPRECATED_STRING = _("(deprecated) ")
DEFAULT_STRING = _("[default: {}]")
ENVVAR_STRING = _("[env var: {}]")
REQUIRED_SHORT_STRING = "*"
REQUIRED_LONG_STRING = _("[required]")
RANGE_STRING = " [{}]"
ARGUMENTS_PANEL_TITLE = _("Arguments")
OPTIONS_PANEL_TITLE = _("Options")
COMMANDS_PANEL_TITLE = _("Commands")
ANSI_PREFIX = "\033["
MARKUP = ""
"""The style of a help item that is prose: drawn as rich markup, options highlighted."""

HelpItem = tuple[str, str]
"""One piece of an option's help column: (text, style), or (prose, :data:`MARKUP`)."""
Row = tuple[bool, str, str, str, str, str, tuple[HelpItem, ...]]
"""One option or argument of a panel: (required, long names, short names, negative long
names, negative short names, metavar and range, help items)."""
Entry = tuple[str, str, bool]
"""One command of a commands panel: (name, help, deprecated)."""


class Highlighters:
    """typer's three regex highlighters, built once rich is loaded."""

    def __init__(self) -> None:
        from rich.highlighter import RegexHighlighter

        class Option(RegexHighlighter):
            highlights = [  # noqa: RUF012  (rich reads the class attribute)
                r"(^|\W)(?P<switch>\-\w+)(?![a-zA-Z0-9])",
                r"(^|\W)(?P<option>\-\-[\w\-]+)(?![a-zA-Z0-9])",
                r"(?P<types>\<[^\>]+\>)",
                r"(?P<usage>Usage: )",
            ]

        class Negative(RegexHighlighter):
            highlights = [  # noqa: RUF012
                r"(^|\W)(?P<negative_switch>\-\w+)(?![a-zA-Z0-9])",
                r"(^|\W)(?P<negative_option>\-\-[\w\-]+)(?![a-zA-Z0-9])",
            ]

        class Types(RegexHighlighter):
            highlights = [  # noqa: RUF012
                r"^(?P<types_sep>(\[|<))",
                r"(?P<types_sep>\|)",
                r"(?P<types_sep>(\]|>))(\.\.\.)?$",
            ]

        self.option: RegexHighlighter = Option()
        self.negative: RegexHighlighter = Negative()
        self.types: RegexHighlighter = Types()


@cache
def highlighters() -> Highlighters:
    """The highlighters (one set per process)."""
    return Highlighters()


def console() -> Console:
    """A stdout console configured as ``typer.rich_utils._get_rich_console`` does."""
    from rich.console import Console
    from rich.theme import Theme

    width = getenv("TERMINAL_WIDTH")
    force = (
        True if getenv("GITHUB_ACTIONS") or getenv("FORCE_COLOR") or getenv("PY_COLORS") else None
    )
    if getenv("_TYPER_FORCE_DISABLE_TERMINAL"):
        force = False
    theme = {
        "option": STYLE_OPTION,
        "switch": STYLE_SWITCH,
        "negative_option": STYLE_NEGATIVE_OPTION,
        "negative_switch": STYLE_NEGATIVE_SWITCH,
        "types": STYLE_TYPES,
        "types_sep": STYLE_TYPES_SEPARATOR,
        "usage": STYLE_USAGE,
    }
    return Console(
        theme=Theme(theme),
        highlighter=highlighters().option,
        color_system="auto",
        force_terminal=force,
        width=int(width) if width else None,
    )


def rich_text(text: str, style: str = "") -> Text:
    """``text`` dedented, its rich markup (or ANSI codes) applied, options highlighted."""
    from rich.text import Text

    text = inspect.cleandoc(text)
    made = (
        Text.from_ansi(text, style=style)
        if ANSI_PREFIX in text
        else Text.from_markup(text, style=style)
    )
    return highlighters().option(made)


def prose(help_: str, deprecated: bool) -> list[Text]:
    """The prose of a command: its first paragraph, then the rest dimmed."""
    from rich.text import Text

    out: list[Text] = []
    if deprecated:
        out.append(Text(DEPRECATED_STRING, style=STYLE_DEPRECATED))
    help_text = inspect.cleandoc(help_).partition("\f")[0]
    first_line, *remaining = help_text.split("\n\n")
    if not first_line.startswith("\b"):
        first_line = first_line.replace("\n", " ")
    out.append(rich_text(first_line.strip()))
    if remaining:
        out.append(Text(""))
        out.append(rich_text("\n\n".join(remaining), style=STYLE_HELPTEXT))
    return out


def _cells(row: Row) -> list[RenderableType]:
    """The cells of one options-panel row (the required mark apart)."""
    from rich.columns import Columns
    from rich.text import Text

    marks = highlighters()
    _, longs, shorts, second_longs, second_shorts, types, items = row
    helps = [
        rich_text(text) if style == MARKUP else Text(text, style=style) for text, style in items
    ]
    return [
        marks.option(longs),
        marks.option(shorts),
        marks.negative(second_longs),
        marks.negative(second_shorts),
        marks.types(Text(types, style=STYLE_TYPES, overflow="fold")),
        Columns(helps),
    ]


def _grid(highlight: bool) -> Table:
    """The borderless, expanding table a panel holds."""
    from rich.table import Table

    return Table(
        highlight=highlight,
        show_header=False,
        expand=True,
        box=None,
        show_lines=False,
        leading=0,
        border_style=None,
        row_styles=None,
        pad_edge=False,
        padding=(0, 1),
    )


def options_panel(name: str, rows: Sequence[Row], out: Console) -> None:
    """An arguments or options panel titled ``name`` (nothing when it has no row)."""
    from rich.panel import Panel
    from rich.text import Text

    if not rows:
        return
    cells = [_cells(row) for row in rows]
    if any(row[0] for row in rows):
        cells = [
            [Text(REQUIRED_SHORT_STRING, style=STYLE_REQUIRED_SHORT) if row[0] else "", *cell]
            for row, cell in zip(rows, cells, strict=True)
        ]
    table = _grid(highlight=True)
    for cell in cells:
        table.add_row(*cell)
    out.print(Panel(table, border_style=STYLE_PANEL_BORDER, title=name, title_align="left"))


def first_paragraph(help_: str) -> str:
    """What a commands panel shows of a command's help: its first paragraph."""
    paragraphs = inspect.cleandoc(help_).split("\n\n")
    if paragraphs[0].startswith("\b"):
        paragraphs[0] = paragraphs[0].replace("\b\n", "")
    return paragraphs[0].strip()


def commands_panel(name: str, commands: Sequence[Entry], out: Console, cmd_len: int) -> None:
    """A commands panel titled ``name``: each command's name and first paragraph."""
    from rich.panel import Panel
    from rich.text import Text

    table = _grid(highlight=False)
    table.add_column(style=STYLE_COMMANDS_TABLE_FIRST_COLUMN, no_wrap=True, width=cmd_len)
    # a big ratio keeps the description greedy, so panels' command columns line up
    table.add_column("Description", justify="left", no_wrap=False, ratio=10)
    rows: list[list[RenderableType | None]] = []
    marks: list[RenderableType | None] = []
    for command, help_, deprecated in commands:
        if deprecated:
            label = Text(command, style=STYLE_DEPRECATED_COMMAND)
            marks.append(Text(DEPRECATED_STRING, style=STYLE_DEPRECATED))
        else:
            label = Text(command)
            marks.append(None)
        rows.append([label, rich_text(first_paragraph(help_))])
    if any(marks):
        rows = [[*row, mark] for row, mark in zip(rows, marks, strict=True)]
    for row in rows:
        table.add_row(*row)
    if table.row_count:
        out.print(Panel(table, border_style=STYLE_PANEL_BORDER, title=name, title_align="left"))


def head(out: Console, usage: str, help_: str | None, deprecated: bool) -> None:
    """The usage line, then the command's prose (when it has some)."""
    from rich.align import Align
    from rich.console import Group
    from rich.padding import Padding

    out.print(Padding(highlighters().option(usage), 1), style=STYLE_USAGE_COMMAND)
    if help_:
        out.print(Padding(Align(Group(*prose(help_, deprecated)), pad=False), (0, 1, 1, 1)))


def tail(out: Console, epilog: str | None) -> None:
    """The epilog, when the command has one."""
    from rich.align import Align
    from rich.padding import Padding

    if epilog:
        epilogue = rich_text("\n\n".join(epilog.split("\n\n")))
        out.print(Padding(Align(epilogue, pad=False), 1))


MARKUP_TAG = re.compile(r"(?<!\\)\[(?=[a-z#/@][^\[]*?\])")
"""An opening bracket rich would read as a markup tag (rich.markup's RE_TAGS), unescaped."""


def escape_markup(text: str | None) -> str | None:
    """``text`` with every bracketed word rich would take for markup escaped, so that
    ``[store] url`` and ``[tools.NAME]`` are shown, not swallowed. Idempotent."""
    return None if text is None else MARKUP_TAG.sub(r"\\[", text)


def page(
    usage: str,
    help_: str | None,
    deprecated: bool,
    option_panels: Sequence[tuple[str, Sequence[Row]]],
    command_panels: Sequence[tuple[str, Sequence[Entry]]],
    epilog: str | None,
) -> None:
    """Print a whole help page on stdout: usage and prose, the arguments and options
    panels, the commands panels (a group's; their name columns line up), the epilog."""
    out = console()
    head(out, usage, help_, deprecated)
    for name, rows in option_panels:
        options_panel(name, rows, out)
    cmd_len = max((len(entry[0]) for _, entries in command_panels for entry in entries), default=0)
    for name, entries in command_panels:
        commands_panel(name, entries, out, cmd_len)
    tail(out, epilog)

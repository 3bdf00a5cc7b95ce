"""``--help`` drawn with rich's core only: typer's layout without typer's ``rich_utils``.

typer (0.28, pinned) renders help through ``typer.rich_utils``, whose import pulls in
``rich.markdown`` (markdown-it), ``rich.syntax`` and ``rich.traceback`` (pygments): about
three times the CPU of ``python -c pass`` before a line is printed. Our help texts use rich
markup only, never markdown, so this module ports the ``"rich"`` markup path of
``typer.rich_utils.rich_format_help`` (MIT, from rich-click) onto the rich modules it needs
(console, table, panel, text, padding, align, columns). The output is byte for byte
typer's, on a terminal and off it; ``tests/unit/test_helpview.py`` holds every command's
help against ``typer.rich_utils`` itself, so a drift fails there, not in front of a user.

Invariants: importing this module imports no rich (the classes only subclass typer's);
rich loads when a help page is drawn; any other markup mode falls back to typer.
"""

from __future__ import annotations

import inspect
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from gettext import gettext as _
from os import getenv
from typing import TYPE_CHECKING, Any

import typer
from typer.core import HAS_RICH, TyperArgument, TyperCommand, TyperGroup, TyperOption

from agentsessions.cli.clickapi import NumberRangeBase, click

if TYPE_CHECKING:
    from rich.columns import Columns
    from rich.console import Console, RenderableType
    from rich.highlighter import RegexHighlighter
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
_PANEL = "rich_help_panel"


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


def _console() -> Console:
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


def _rich_text(text: str, style: str = "") -> Text:
    """``text`` dedented, its rich markup (or ANSI codes) applied, options highlighted."""
    from rich.text import Text

    text = inspect.cleandoc(text)
    made = (
        Text.from_ansi(text, style=style)
        if ANSI_PREFIX in text
        else Text.from_markup(text, style=style)
    )
    return highlighters().option(made)


def _help_text(obj: click.Command) -> list[Text]:
    """The prose of a command: its first paragraph, then the rest dimmed."""
    from rich.text import Text

    out: list[Text] = []
    if obj.deprecated:
        out.append(Text(DEPRECATED_STRING, style=STYLE_DEPRECATED))
    help_text = inspect.cleandoc(obj.help or "").partition("\f")[0]
    first_line, *remaining = help_text.split("\n\n")
    if not first_line.startswith("\b"):
        first_line = first_line.replace("\n", " ")
    out.append(_rich_text(first_line.strip()))
    if remaining:
        out.append(Text(""))
        out.append(_rich_text("\n\n".join(remaining), style=STYLE_HELPTEXT))
    return out


def _envvar(param: click.Parameter, ctx: click.Context) -> tuple[Any, str]:
    envvar = getattr(param, "envvar", None)
    if envvar is None and (
        getattr(param, "allow_from_autoenv", None)
        and getattr(ctx, "auto_envvar_prefix", None) is not None
        and param.name is not None
    ):
        envvar = f"{ctx.auto_envvar_prefix}_{param.name.upper()}"
    if envvar is None:
        return None, ""
    return envvar, envvar if isinstance(envvar, str) else ", ".join(str(d) for d in envvar)


def _parameter_help(param: click.Parameter, ctx: click.Context) -> Columns:
    """An option's or argument's help, env var, default and ``[required]``, on one line."""
    from rich.columns import Columns
    from rich.text import Text

    items: list[Text] = []
    envvar, var_str = _envvar(param, ctx)
    help_value: str | None = getattr(param, "help", None)
    if help_value:
        paragraphs = [
            x.replace("\n", " ").strip()
            if not x.startswith("\b")
            else "{}\n".format(x.strip("\b\n"))
            for x in help_value.split("\n\n")
        ]
        items.append(_rich_text("\n".join(paragraphs).strip()))
    if envvar and getattr(param, "show_envvar", None):
        items.append(Text(ENVVAR_STRING.format(var_str), style=STYLE_OPTION_ENVVAR))
    if isinstance(param, (TyperOption, TyperArgument)):
        default_value = param._extract_default_help_str(ctx=ctx)
        show_default_is_str = isinstance(param.show_default, str)
        if show_default_is_str or (
            default_value is not None and (param.show_default or ctx.show_default)
        ):
            default_str = param._get_default_string(
                ctx=ctx, show_default_is_str=show_default_is_str, default_value=default_value
            )
            if default_str:
                items.append(Text(DEFAULT_STRING.format(default_str), style=STYLE_OPTION_DEFAULT))
    if param.required:
        items.append(Text(REQUIRED_LONG_STRING, style=STYLE_REQUIRED_LONG))
    return Columns(items)


def _option_row(param: click.Parameter, ctx: click.Context) -> list[RenderableType]:
    """One row of an options or arguments panel: names, metavar and range, help."""
    from rich.text import Text

    marks = highlighters()
    metavar_name = metavar_type = None
    metavar_str = param.make_metavar(ctx=ctx)
    if isinstance(param, TyperArgument):
        metavar_name = param.metavar if param.metavar is not None else param.name or ""
        metavar_type = param.type.get_metavar(param=param, ctx=ctx)
        if metavar_type is None:
            metavar_type = f"<{param.type.name}>"
    elif isinstance(param, TyperOption):
        metavar_type = metavar_str
    longs, shorts, second_longs, second_shorts = [], [], [], []
    for opt_str in param.opts:
        if "--" in opt_str:
            longs.append(opt_str)
        else:
            shorts.append(metavar_name or opt_str)
    for opt_str in param.secondary_opts:
        if "--" in opt_str:
            second_longs.append(opt_str)
        else:
            second_shorts.append(metavar_name or opt_str)
    types_data = Text(style=STYLE_TYPES, overflow="fold")
    if metavar_type and "bool" not in metavar_type.lower():
        types_data.append(metavar_type)
    if (
        isinstance(param.type, NumberRangeBase)
        and isinstance(param, TyperOption)
        and not (param.count and param.type.min == 0 and param.type.max is None)
    ):
        range_str = param.type._describe_range()
        if range_str:
            types_data.append(RANGE_STRING.format(range_str))
    return [
        marks.option(",".join(longs)),
        marks.option(",".join(shorts)),
        marks.negative(",".join(second_longs)),
        marks.negative(",".join(second_shorts)),
        marks.types(types_data),
        _parameter_help(param, ctx),
    ]


def _options_panel(
    name: str, params: list[click.Parameter], ctx: click.Context, console: Console
) -> None:
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    if not params:
        return
    rows = [_option_row(param, ctx) for param in params]
    required = [
        Text(REQUIRED_SHORT_STRING, style=STYLE_REQUIRED_SHORT) if p.required else ""
        for p in params
    ]
    if any(required):
        rows = [[mark, *row] for mark, row in zip(required, rows, strict=True)]
    table = Table(
        highlight=True,
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
    for row in rows:
        table.add_row(*row)
    console.print(Panel(table, border_style=STYLE_PANEL_BORDER, title=name, title_align="left"))


def _commands_panel(name: str, commands: list[Any], console: Console, cmd_len: int) -> None:
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    table = Table(
        highlight=False,
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
    table.add_column(style=STYLE_COMMANDS_TABLE_FIRST_COLUMN, no_wrap=True, width=cmd_len)
    # a big ratio keeps the description greedy, so panels' command columns line up
    table.add_column("Description", justify="left", no_wrap=False, ratio=10)
    rows: list[list[RenderableType | None]] = []
    deprecated: list[RenderableType | None] = []
    for command in commands:
        paragraphs = inspect.cleandoc(command.short_help or command.help or "").split("\n\n")
        if paragraphs[0].startswith("\b"):
            paragraphs[0] = paragraphs[0].replace("\b\n", "")
        if command.deprecated:
            label = Text(command.name or "", style=STYLE_DEPRECATED_COMMAND)
            deprecated.append(Text(DEPRECATED_STRING, style=STYLE_DEPRECATED))
        else:
            label = Text(command.name or "")
            deprecated.append(None)
        rows.append([label, _rich_text(paragraphs[0].strip())])
    if any(deprecated):
        rows = [[*row, mark] for row, mark in zip(rows, deprecated, strict=True)]
    for row in rows:
        table.add_row(*row)
    if table.row_count:
        console.print(Panel(table, border_style=STYLE_PANEL_BORDER, title=name, title_align="left"))


def _panels(obj: click.Command, ctx: click.Context, console: Console) -> None:
    """The arguments and options panels (default panel first, then named ones)."""
    arguments: defaultdict[str, list[click.Parameter]] = defaultdict(list)
    options: defaultdict[str, list[click.Parameter]] = defaultdict(list)
    for param in obj.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        if isinstance(param, TyperArgument):
            arguments[getattr(param, _PANEL, None) or ARGUMENTS_PANEL_TITLE].append(param)
        elif isinstance(param, TyperOption):
            options[getattr(param, _PANEL, None) or OPTIONS_PANEL_TITLE].append(param)
    for title, panels in ((ARGUMENTS_PANEL_TITLE, arguments), (OPTIONS_PANEL_TITLE, options)):
        _options_panel(title, panels.get(title, []), ctx, console)
        for name, params in panels.items():
            if name != title:
                _options_panel(name, params, ctx, console)


@dataclass(frozen=True)
class Summary:
    """What a group's commands panel shows of a subcommand, without building it."""

    name: str
    help: str | None
    short_help: str | None = None
    deprecated: bool = False
    hidden: bool = False
    rich_help_panel: str | None = None

    def __post_init__(self) -> None:
        # the panel draws this text as rich markup, as it would the built command's
        object.__setattr__(self, "help", escape_markup(self.help))
        object.__setattr__(self, "short_help", escape_markup(self.short_help))


def _command_panels(obj: TyperGroup, ctx: click.Context, console: Console) -> None:
    panels: defaultdict[str, list[Any]] = defaultdict(list)
    # a group that builds subcommands on demand offers their summaries: the panel needs
    # only names and help, not every command's parameters
    peek = getattr(obj, "peek_command", obj.get_command)
    for name in obj.list_commands(ctx):
        command = peek(ctx, name)
        if command and not command.hidden:
            panels[getattr(command, _PANEL, None) or COMMANDS_PANEL_TITLE].append(command)
    cmd_len = max((len(c.name or "") for cs in panels.values() for c in cs), default=0)
    _commands_panel(COMMANDS_PANEL_TITLE, panels.get(COMMANDS_PANEL_TITLE, []), console, cmd_len)
    for name, commands in panels.items():
        if name != COMMANDS_PANEL_TITLE:
            _commands_panel(name, commands, console, cmd_len)


def print_help(obj: click.Command, ctx: click.Context) -> None:
    """Print ``obj``'s help page on stdout exactly as ``typer.rich_utils.rich_format_help``
    does in the ``"rich"`` markup mode."""
    from rich.align import Align
    from rich.console import Group
    from rich.padding import Padding

    console = _console()
    console.print(Padding(highlighters().option(obj.get_usage(ctx)), 1), style=STYLE_USAGE_COMMAND)
    if obj.help:
        console.print(Padding(Align(Group(*_help_text(obj)), pad=False), (0, 1, 1, 1)))
    _panels(obj, ctx, console)
    if isinstance(obj, TyperGroup):
        _command_panels(obj, ctx, console)
    if obj.epilog:
        epilogue = _rich_text("\n\n".join(obj.epilog.split("\n\n")))
        console.print(Padding(Align(epilogue, pad=False), 1))


def _ours(markup_mode: Any) -> bool:
    """True when the help is ours to draw (rich available, rich markup); else typer's."""
    return bool(HAS_RICH) and markup_mode == "rich"


MARKUP_TAG = re.compile(r"(?<!\\)\[(?=[a-z#/@][^\[]*?\])")
"""An opening bracket rich would read as a markup tag (rich.markup's RE_TAGS), unescaped."""


def escape_markup(text: str | None) -> str | None:
    """``text`` with every bracketed word rich would take for markup escaped, so that
    ``[store] url`` and ``[tools.NAME]`` are shown, not swallowed. Idempotent."""
    return None if text is None else MARKUP_TAG.sub(r"\\[", text)


def escape_help(command: TyperCommand | TyperGroup) -> None:
    """Escape the help, epilog and parameter help of ``command`` (built by typer) in place,
    when its help is drawn in rich markup: our help texts are prose, never markup."""
    if not _ours(command.rich_markup_mode):
        return
    command.help = escape_markup(command.help)
    command.short_help = escape_markup(command.short_help)
    command.epilog = escape_markup(command.epilog)
    for param in command.params:
        if isinstance(param, TyperOption | TyperArgument):
            param.help = escape_markup(param.help)


class HelpCommand(TyperCommand):
    """A typer command whose ``--help`` is drawn by :func:`print_help`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        escape_help(self)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Draw the help page (typer's own path for any markup mode but rich)."""
        if not _ours(self.rich_markup_mode):
            return super().format_help(ctx, formatter)
        print_help(self, ctx)
        return None


class HelpGroup(TyperGroup):
    """A typer group whose ``--help`` is drawn by :func:`print_help`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        escape_help(self)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Draw the help page (typer's own path for any markup mode but rich)."""
        if not _ours(self.rich_markup_mode):
            return super().format_help(ctx, formatter)
        print_help(self, ctx)
        return None


def reflow(doc: str) -> str:
    """A docstring with each paragraph on one line: rich keeps single line breaks, so help
    text wrapped for the source file would break raggedly in an 80-column terminal."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def reflow_help(app: typer.Typer) -> None:
    """Give every command registered on ``app`` without explicit help its reflowed
    docstring, and a class whose ``--help`` is drawn without ``typer.rich_utils``.

    Called by :mod:`agentsessions.cli` once the command modules (``turns``, ``compute``,
    ``follow``, ``cancel``) have registered theirs, groups' commands included.
    """
    groups = [group.typer_instance for group in app.registered_groups if group.typer_instance]
    for command in [c for t in (app, *groups) for c in t.registered_commands]:
        if command.help is None and command.callback is not None and command.callback.__doc__:
            command.help = reflow(command.callback.__doc__)
        if command.cls is TyperCommand:  # typer's default: never one a command chose
            command.cls = HelpCommand

"""``--help`` drawn with rich's core only: typer's layout without typer's ``rich_utils``.

typer (0.28, pinned) renders help through ``typer.rich_utils``, whose import pulls in
``rich.markdown`` (markdown-it), ``rich.syntax`` and ``rich.traceback`` (pygments): about
three times the CPU of ``python -c pass`` before a line is printed. Our help texts use rich
markup only, never markdown, so this module reads what the ``"rich"`` markup path of
``typer.rich_utils.rich_format_help`` (MIT, from rich-click) shows of a command into plain
values, and :mod:`.helpdraw` draws them on the rich modules it needs (console, table,
panel, text, padding, align, columns). The output is byte for byte typer's, on a terminal
and off it; ``tests/unit/test_helpview.py`` holds every command's help against
``typer.rich_utils`` itself, so a drift fails there, not in front of a user.

Invariants: importing this module imports no rich (the classes only subclass typer's);
rich loads when a help page is drawn; any other markup mode falls back to typer.
"""

from __future__ import annotations

import inspect
from collections import defaultdict
from typing import Any

import typer
from typer.core import HAS_RICH, TyperArgument, TyperCommand, TyperGroup, TyperOption

from agentsessions.cli import helpdraw as draw
from agentsessions.cli.clickapi import NumberRangeBase, click
from agentsessions.cli.helpdraw import escape_markup
from agentsessions.valueclass import value

_PANEL = "rich_help_panel"


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


def _parameter_help(param: click.Parameter, ctx: click.Context) -> tuple[draw.HelpItem, ...]:
    """An option's or argument's help, env var, default and ``[required]``, on one line."""
    items: list[draw.HelpItem] = []
    envvar, var_str = _envvar(param, ctx)
    help_value: str | None = getattr(param, "help", None)
    if help_value:
        paragraphs = [
            x.replace("\n", " ").strip()
            if not x.startswith("\b")
            else "{}\n".format(x.strip("\b\n"))
            for x in help_value.split("\n\n")
        ]
        items.append(("\n".join(paragraphs).strip(), draw.MARKUP))
    if envvar and getattr(param, "show_envvar", None):
        items.append((draw.ENVVAR_STRING.format(var_str), draw.STYLE_OPTION_ENVVAR))
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
                items.append((draw.DEFAULT_STRING.format(default_str), draw.STYLE_OPTION_DEFAULT))
    if param.required:
        items.append((draw.REQUIRED_LONG_STRING, draw.STYLE_REQUIRED_LONG))
    return tuple(items)


def option_row(param: click.Parameter, ctx: click.Context) -> draw.Row:
    """What one row of an options or arguments panel shows of ``param``."""
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
    types = ""
    if metavar_type and "bool" not in metavar_type.lower():
        types += metavar_type
    if (
        isinstance(param.type, NumberRangeBase)
        and isinstance(param, TyperOption)
        and not (param.count and param.type.min == 0 and param.type.max is None)
    ):
        range_str = param.type._describe_range()
        if range_str:
            types += draw.RANGE_STRING.format(range_str)
    return (
        bool(param.required),
        ",".join(longs),
        ",".join(shorts),
        ",".join(second_longs),
        ",".join(second_shorts),
        types,
        _parameter_help(param, ctx),
    )


def option_panels(obj: click.Command, ctx: click.Context) -> list[tuple[str, list[draw.Row]]]:
    """The arguments and options panels (default panel first, then named ones) and their
    rows, in the order the page shows them."""
    arguments: defaultdict[str, list[draw.Row]] = defaultdict(list)
    options: defaultdict[str, list[draw.Row]] = defaultdict(list)
    for param in obj.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        if isinstance(param, TyperArgument):
            panel = getattr(param, _PANEL, None) or draw.ARGUMENTS_PANEL_TITLE
            arguments[panel].append(option_row(param, ctx))
        elif isinstance(param, TyperOption):
            panel = getattr(param, _PANEL, None) or draw.OPTIONS_PANEL_TITLE
            options[panel].append(option_row(param, ctx))
    out: list[tuple[str, list[draw.Row]]] = []
    titles = (draw.ARGUMENTS_PANEL_TITLE, arguments), (draw.OPTIONS_PANEL_TITLE, options)
    for title, panels in titles:
        out.append((title, panels.get(title, [])))
        out.extend((name, rows) for name, rows in panels.items() if name != title)
    return out


@value(frozen=True)
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


def command_panels(obj: TyperGroup, ctx: click.Context) -> list[tuple[str, list[draw.Entry]]]:
    """The commands panels of a group (the default one first) and their entries."""
    panels: defaultdict[str, list[draw.Entry]] = defaultdict(list)
    # a group that builds subcommands on demand offers their summaries: the panel needs
    # only names and help, not every command's parameters
    peek = getattr(obj, "peek_command", obj.get_command)
    for name in obj.list_commands(ctx):
        command = peek(ctx, name)
        if command and not command.hidden:
            panel = getattr(command, _PANEL, None) or draw.COMMANDS_PANEL_TITLE
            text = command.short_help or command.help or ""
            panels[panel].append((command.name or "", text, bool(command.deprecated)))
    title = draw.COMMANDS_PANEL_TITLE
    return [(title, panels.get(title, [])), *((n, c) for n, c in panels.items() if n != title)]


def print_help(obj: click.Command, ctx: click.Context) -> None:
    """Print ``obj``'s help page on stdout exactly as ``typer.rich_utils.rich_format_help``
    does in the ``"rich"`` markup mode."""
    panels = command_panels(obj, ctx) if isinstance(obj, TyperGroup) else []
    usage = obj.get_usage(ctx)
    draw.page(usage, obj.help, bool(obj.deprecated), option_panels(obj, ctx), panels, obj.epilog)


def _ours(markup_mode: Any) -> bool:
    """True when the help is ours to draw (rich available, rich markup); else typer's."""
    return bool(HAS_RICH) and markup_mode == "rich"


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

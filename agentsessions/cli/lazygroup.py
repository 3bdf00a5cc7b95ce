"""A typer group whose subcommands are built on first use.

typer turns each registered command's signature into click parameters (evaluating every
string annotation) before it parses anything: about 0.4x ``python -c pass`` for twenty
commands when one runs. :func:`lazy_group` builds the root group of a ``typer.Typer``
with its subcommands deferred; each is built by typer's own functions when looked up, so
the command is the one typer would have built. Nor is a subcommand's module imported
before it is looked up: :data:`.commands.COMMANDS` names the module and the summary of each.
The root's help page shows each unbuilt subcommand from a
:class:`~agentsessions.cli.helpview.Summary` (name and help), so ``--help`` imports and
builds none either.

Invariants: the same commands in the same order as typer's eager build; an unknown name
builds them all before typer suggests a close one (an error path).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import typer
import typer.main

from agentsessions.cli.helpview import HelpGroup, Summary

if TYPE_CHECKING:
    from agentsessions.cli.clickapi import Context

G = TypeVar("G", bound="LazyGroup")


class LazyGroup(HelpGroup):
    """A group holding some subcommands as builders until they are looked up."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deferred: dict[str, Callable[[], Any]] = {}
        self._summaries: dict[str, Summary] = {}
        self._order: list[str] = []

    def defer(self, name: str, build: Callable[[], Any], summary: Summary) -> None:
        """Add the subcommand ``name``, made by ``build()`` when first looked up; until
        then the group's help page shows its ``summary``."""
        self._deferred[name] = build
        self._summaries[name] = summary
        self._order.append(name)

    def list_commands(self, ctx: Context) -> list[str]:
        """Every subcommand's name, built or not, in the order they were registered."""
        return [*self._order, *(name for name in self.commands if name not in self._order)]

    def get_command(self, ctx: Context, cmd_name: str) -> Any:
        """The subcommand ``cmd_name``, built now if it was deferred."""
        build = self._deferred.pop(cmd_name, None)
        if build is not None:
            self.commands[cmd_name] = build()
        return super().get_command(ctx, cmd_name)

    def peek_command(self, ctx: Context, cmd_name: str) -> Any:
        """The subcommand if built, else its summary (enough for a commands panel)."""
        if cmd_name in self._deferred:
            return self._summaries[cmd_name]
        return self.get_command(ctx, cmd_name)

    def resolve_command(self, ctx: Context, args: list[str]) -> Any:
        """Find the subcommand; for an unknown name, typer suggests from every built one."""
        if args and args[0] not in self.commands and args[0] not in self._deferred:
            for name in list(self._deferred):  # a typo: build them all (an error path)
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)


def lazy_group(app: typer.Typer, cls: type[G]) -> G:
    """``app``'s root group as typer builds it (its class must be ``cls``), with every
    command of :data:`.commands.COMMANDS` deferred: its module is imported, and the command
    built, when it is first looked up; until then the table's summary stands for it."""
    from agentsessions.cli.commands import COMMANDS

    bare = copy.copy(app)  # the root callback and settings, no subcommand to build
    bare.registered_commands, bare.registered_groups = [], []
    root = typer.main.get_command(bare)  # get_group, plus the completion options
    assert isinstance(root, cls)
    for name, module, summary in COMMANDS:
        root.defer(name, functools.partial(build, app, name, module), Summary(name, summary))
    return root


def build(app: typer.Typer, name: str, module: str) -> Any:
    """The subcommand or group ``name`` that ``module`` registers on ``app``, as typer's
    eager build makes it (the module imported now, its help reflowed)."""
    from typer.main import get_command_from_info, get_command_name, get_group_from_info

    from agentsessions.cli.commands import load
    from agentsessions.cli.helpview import reflow_help

    load(module)
    reflow_help(app)
    short, markup = app.pretty_exceptions_short, app.rich_markup_mode
    for info in app.registered_commands:
        assert info.callback is not None
        if (info.name or get_command_name(info.callback.__name__)) == name:
            return get_command_from_info(
                info, pretty_exceptions_short=short, rich_markup_mode=markup
            )
    for group in app.registered_groups:
        if group.name == name:
            return get_group_from_info(
                group,
                pretty_exceptions_short=short,
                rich_markup_mode=markup,
                suggest_commands=app.suggest_commands,
            )
    raise LookupError(f"agentsessions.cli.{module} registers no command {name!r}")

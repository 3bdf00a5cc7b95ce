"""Global options wherever a user types them, and a ``--home`` that cannot swallow a word.

``agentsessions list --home X`` is what people type: :func:`hoist` moves each global option
(``--home``, ``--store``, ``--server``, ...) found after the command's name to before it,
so the root parses it as if it had been typed first. A global option the command defines
itself (``serve --store``, ``serve --tls-cert``) stays the command's own.

Invariants: only tokens the parser would read as that option move (never an option's
value such as ``exec --input --home``, nothing after ``--``); the order of everything
else is kept; no command is built but the one that runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from typer.core import TyperGroup, TyperOption

from agentsessions.errors import InvalidArgumentError

if TYPE_CHECKING:
    from agentsessions.cli.clickapi import Command, Context

LOCAL_ONLY = frozenset({"--json", "--version", "--help", "-h"})
"""Root options that stay where they are: every command has its own ``--json``."""


def _options(command: Command) -> dict[str, bool]:
    """Each option name of ``command`` and whether it takes a value."""
    out: dict[str, bool] = {}
    for param in command.params:
        if not isinstance(param, TyperOption):
            continue
        takes = not (param.is_flag or param.count)
        for name in (*param.opts, *param.secondary_opts):
            out[name] = takes
    return out


def _positional(args: list[str], start: int, options: dict[str, bool]) -> int:
    """The index of the first positional token at or after ``start`` (``len(args)`` if
    none): skips the options ``options`` knows, with their values."""
    i = start
    while i < len(args):
        token = args[i]
        if token == "--" or not token.startswith("-") or token == "-":
            return i if token != "--" else len(args)
        i += 2 if options.get(token, False) else 1
    return i


def hoist(root: TyperGroup, ctx: Context, args: list[str]) -> list[str]:
    """``args`` with the global options typed after the command moved before it."""
    root_opts = _options(root)
    globals_ = {name: takes for name, takes in root_opts.items() if name not in LOCAL_ONLY}
    at = _positional(args, 0, root_opts)
    if at >= len(args):
        return args
    command = root.get_command(ctx, args[at])
    own: dict[str, bool] = {}
    tail_from = at + 1
    while command is not None:  # descend through sub-groups (``compute list``)
        own |= _options(command)
        if not isinstance(command, TyperGroup):
            break
        nxt = _positional(args, tail_from, own)
        if nxt >= len(args):
            break
        command, tail_from = command.get_command(ctx, args[nxt]), nxt + 1
    if command is None:  # an unknown name: the parser says so as it always did
        return args
    moved: list[str] = []
    kept: list[str] = args[:tail_from]
    i = tail_from
    while i < len(args):
        token = args[i]
        if token == "--":
            kept += args[i:]
            break
        name = token.split("=", 1)[0] if token.startswith("--") else token
        if name in globals_ and name not in own:
            width = 2 if globals_[name] and "=" not in token else 1
            if i + width > len(args):  # moved, it would take the command's name as its value
                raise InvalidArgumentError(
                    f"option {name} requires an argument", hint=f"{root.name} --help"
                )
            moved += args[i : i + width]
            i += width
            continue
        width = 2 if own.get(token, False) else 1
        kept += args[i : i + width]
        i += width
    if not moved:
        return args
    return kept[:at] + moved + kept[at:]

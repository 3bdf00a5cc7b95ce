"""A command line read without typer, against the options typer defines
(:mod:`.gen.commandline`, generated from them by :mod:`.parsegen`).

:func:`parse` reads the few shapes whose meaning is certain and returns None for anything
else, so that typer parses it (and words any error) as it always did. Read here:
``[ROOT-OPTION...] COMMAND [OPTION | ARGUMENT...]`` where each option is ``--name VALUE``,
``--name=VALUE``, a short ``-p VALUE`` or a flag, and each of the command's arguments is
one word that does not start with ``-``; the root options ``--home`` and ``--json``, also
after the command (as :mod:`.globalopts` moves them); ``--home`` from its environment
variable when not typed. Left to typer: an option it does not define or this module does
not read (``--server``, ``--help``, completion...), one given twice (but a repeatable
one), a value that starts with ``-`` or is not of the option's type, an argument missing
or too many, ``--``, and any root option whose environment variable is set
(``AGENTSESSIONS_SERVER``...) but ``--home``'s.

Invariant: a command line parsed here has the values typer would give it (same names,
defaults, conversions); importing this module imports only the generated tables.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from agentsessions.cli.gen import commandline as table
from agentsessions.valueclass import field, value

HONOURED = {"home": "str", "as_json": "flag"}
"""The root options a fast command acts on (dest -> the kind it must have); any other root
option, given or set in its environment, leaves the command line to typer."""

KINDS = ("str", "strs", "uint", "ufloat", "flag", "arg", "arg?")
"""The kinds of :mod:`.parsegen` read here; a command with a parameter of another kind is
typer's to parse."""
Row = tuple[tuple[str, ...], str, str, Any, "str | None"]


@value
class Parsed:
    """A command line read: the command, its options' values, the root's."""

    command: str
    values: dict[str, Any] = field(default_factory=dict)
    home: str | None = None
    home_typed: bool = False  # --home came from the command line (not the environment)
    as_json: bool = False


def _by_name(rows: Iterable[Row]) -> dict[str, Row]:
    return {name: row for row in rows for name in row[0]}


def _value(argv: list[str], i: int, row: Row, attached: str | None) -> tuple[Any, int] | None:
    """The value of option ``row`` at ``argv[i]`` and the index after it, or None when it is
    not read here (see the module)."""
    kind = row[2]
    if kind == "flag":
        return (True, i + 1) if attached is None else None
    if attached is not None:
        text, after = attached, i + 1
    elif i + 1 < len(argv) and not argv[i + 1].startswith("-"):
        text, after = argv[i + 1], i + 2
    else:
        return None
    if kind in ("str", "strs"):
        return text, after
    if kind == "uint" and _digits(text):
        return int(text), after
    whole, dot, fraction = text.partition(".")
    if kind == "ufloat" and _digits(whole) and (not dot or _digits(fraction)):
        return float(text), after  # N or N.N: the value click's float() gives
    return None


def _digits(text: str) -> bool:
    """True for one or more ASCII digits and nothing else."""
    return text.isascii() and text.isdigit()


def _read(argv: list[str], i: int, rows: Mapping[str, Row], into: dict[str, Any]) -> int | None:
    """Read the option at ``argv[i]`` into ``into`` (by dest); the next index, or None."""
    token = argv[i]
    name, eq, text = token.partition("=") if token.startswith("--") else (token, "", "")
    row = rows.get(name)
    if row is None or (row[1] in into and row[2] != "strs"):
        return None  # unknown, or given twice: typer's
    read = _value(argv, i, row, text if eq else None)
    if read is None:
        return None
    if row[2] == "strs":  # repeatable: each value kept, in order
        into.setdefault(row[1], []).append(read[0])
    else:
        into[row[1]] = read[0]
    return read[1]


def _root_ok(given: dict[str, Any], environ: Mapping[str, str]) -> bool:
    """True when the root options typed and set are only those a fast command honours."""
    for _, dest, kind, _, envvar in table.ROOT:
        if dest in HONOURED:
            if HONOURED[dest] != kind:
                return False
        elif dest in given or (envvar and environ.get(envvar)):
            return False
    return True


def parse(argv: list[str], environ: Mapping[str, str] = os.environ) -> Parsed | None:
    """``argv`` read as typer would read it, or None when typer must read it."""
    root_rows = _by_name(table.ROOT)
    given: dict[str, Any] = {}  # the root's options, typed before or after the command
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        nxt = _read(argv, i, root_rows, given)
        if nxt is None:
            return None
        i = nxt
    rows = table.COMMANDS.get(argv[i]) if i < len(argv) else None
    if rows is None or any(row[2] not in KINDS or row[4] for row in rows):
        return None
    parsed = Parsed(argv[i])
    own = _by_name(row for row in rows if row[2] not in ("arg", "arg?"))
    args = [row[1] for row in rows if row[2] in ("arg", "arg?")]  # the arguments, in order
    required = {row[1] for row in rows if row[2] == "arg"}
    hoisted = {n: r for n, r in root_rows.items() if n not in table.LOCAL_ONLY and n not in own}
    i += 1
    while i < len(argv):
        token = argv[i]
        if token == "--":
            return None  # the end of options: typer's
        if not token.startswith("-") or token == "-":
            if not args:
                return None  # an argument too many: typer's error
            parsed.values[args.pop(0)] = token
            i += 1
            continue
        name = token.partition("=")[0] if token.startswith("--") else token
        # an option of the command's, else the root's typed after it (globalopts.hoist)
        rows_, into = (own, parsed.values) if name in own else (hoisted, given)
        nxt = _read(argv, i, rows_, into)
        if nxt is None:
            return None
        i = nxt
    if required & set(args):
        return None  # a missing argument: typer's error
    if not _root_ok(given, environ):
        return None
    parsed.home_typed = "home" in given
    parsed.home = given["home"] if parsed.home_typed else (environ.get(_envvar("home")) or None)
    parsed.as_json = bool(given.get("as_json", False))
    for _, dest, _, default, _ in rows:
        parsed.values.setdefault(dest, default)
    return parsed


def _envvar(dest: str) -> str:
    """The environment variable of the root option ``dest`` ("" if none)."""
    return next((row[4] or "" for row in table.ROOT if row[1] == dest), "")

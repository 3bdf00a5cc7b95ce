"""The library says what is wrong in its own terms; the CLI adds the flag that fixes it.

An error about a parameter names it in its ``param`` field;
:func:`agentsessions.cli.failures.advice` turns that into the flag advice a command-line user
needs. A scan keeps the library's own
messages free of ``--flags`` (outside the modules still listed as not converted).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from agentsessions.cli.failures import FLAG_ADVICE, KEY_ADVICE, advice
from agentsessions.errors import (
    InvalidArgumentError,
    LockHeldError,
    MasterKeyError,
    PlacementError,
)

PACKAGE = Path(__file__).resolve().parents[2] / "agentsessions"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+")
NOT_CONVERTED: set[str] = set()  # every library error is converted


def test_a_param_gets_the_flag_that_sets_it() -> None:
    exc = InvalidArgumentError("x already exists", hint="overwrite=True replaces it")
    exc.fields["param"] = "overwrite"
    assert advice(exc, "agentsessions export") == "pass --force to overwrite it"


def test_the_advice_names_the_session_when_the_error_does() -> None:
    exc = InvalidArgumentError("names no harness", param="rerun_harness", session="sess-1")
    assert "replay sess-1 --rerun --harness echo" in advice(exc, "agentsessions replay")
    anonymous = InvalidArgumentError("names no harness", param="rerun_harness")
    assert "replay SESSION --rerun" in advice(anonymous, "agentsessions replay")


def test_without_a_known_param_the_library_hint_stands() -> None:
    assert advice(PlacementError("no", hint="own words"), "agentsessions exec") == "own words"
    odd = InvalidArgumentError("no", hint="own words", param="not-a-param")
    assert advice(odd, "agentsessions exec") == "own words"


def test_a_missing_master_key_is_answered_with_the_key_flag() -> None:
    exc = MasterKeyError("no key", hint="give the master key: key_file, ...", param="key_file")
    assert advice(exc, "agentsessions log") == KEY_ADVICE
    own = MasterKeyError("key file is mode 0644", hint="chmod 600 it")  # a specific hint stays
    assert advice(own, "agentsessions log") == "chmod 600 it"
    keyring = MasterKeyError("no keyring", hint="...", param="keyring")
    assert advice(keyring, "agentsessions log") == FLAG_ADVICE["keyring"]


def test_a_busy_session_names_wait() -> None:
    exc = LockHeldError("busy", hint="wait for it, or give the call a wait in seconds")
    assert "--wait SECONDS" in advice(exc, "agentsessions exec")


def _text(node: ast.AST) -> str | None:
    """A string literal's text; an f-string's with ``{}`` for each value (``{PROG}`` kept
    as the command's name, so a hint naming a whole command reads as one)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):
        return None
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value))
        elif isinstance(value, ast.FormattedValue) and getattr(value.value, "id", "") == "PROG":
            parts.append("agentsessions")
        else:
            parts.append("{}")
    return "".join(parts)


def _flag_messages(source: str, label: str) -> list[str]:
    """Each string naming a ``--flag`` inside a call of an ``...Error`` class, unless the
    flag belongs to a whole command the hint names (STYLE: a hint names the command that
    helps: ``agentsessions verify --all``), which is advice a library may give."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if not name.endswith("Error"):
            continue
        joined = [sub for sub in ast.walk(node) if isinstance(sub, ast.JoinedStr)]
        inner = {id(value) for sub in joined for value in sub.values}
        for sub in ast.walk(node):
            text = None if id(sub) in inner else _text(sub)
            flag = FLAG.search(text) if text is not None else None
            if text is not None and flag and "agentsessions " not in text[: flag.start()]:
                found.append(f"{label}:{sub.lineno}: {text!r}")
    return found


def test_library_errors_name_no_command_line_flag() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("cli/") or any(
            rel == skip or rel.startswith(skip + "/") for skip in NOT_CONVERTED
        ):
            continue
        found.extend(_flag_messages(path.read_text(encoding="utf-8"), rel))
    assert found == []


def test_the_scan_sees_a_flag_in_an_error() -> None:
    source = 'def f():\n    raise InvalidArgumentError("bad", hint=f"pass --force {x}")\n'
    assert _flag_messages(source, "probe") == ["probe:2: 'pass --force {}'"]
    assert _flag_messages('raise InvalidArgumentError("bad", param="overwrite")\n', "p") == []
    command = 'raise InvalidArgumentError("bad", hint=f"{PROG} verify --all lists them")\n'
    assert _flag_messages(command, "p") == []  # a whole command is a hint a library may give
    flag_first = 'raise InvalidArgumentError("bad", hint="--all, as in agentsessions verify")\n'
    assert _flag_messages(flag_first, "p") != []


def test_every_advice_answers_a_param_the_library_sets() -> None:
    """No dead advice: each FLAG_ADVICE key is a ``param`` some library error passes (as
    ``param="key"`` or a conditional expression holding ``"key"``)."""
    source = "\n".join(
        p.read_text(encoding="utf-8")
        for p in PACKAGE.rglob("*.py")
        if not p.relative_to(PACKAGE).as_posix().startswith("cli/")
    )
    unused = [key for key in FLAG_ADVICE if f'"{key}"' not in source]
    assert unused == []

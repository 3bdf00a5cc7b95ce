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
NOT_CONVERTED = {
    # the daemon's own configuration errors (its flags are serve's) and the wire's client;
    # the token book (the operator's `token` commands) moved from server/ to sessions/
    "server",
    "client",
    "sessions/tokens.py",
    # operator-facing specs: a tool workload, a model catalog entry, a remote harness
    "tools",
    "models",
    "runtimes/remote.py",
    "wire/harnessclient.py",  # moved from server/: a hint naming the command to start one
    # the turn's checks, being moved into one layer by the TurnRequest work
    "controller/controller.py",
    "controller/toolcalls.py",
    "controller/workloads.py",
    "sessions/checks.py",
    "sessions/harnessbook.py",
    # hints that name a whole command to run (STYLE: a hint names the command that helps)
    "sessions/offline.py",
    "journal/stores/metafile.py",
    "journal/stores/jetstream/listing.py",
    "journal/stores/jetstream/store.py",
    "journal/stores/jetstream/conn.py",
    "journal/stores/file/store.py",
}


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


def _flag_messages(source: str, label: str) -> list[str]:
    """Each string naming a ``--flag`` inside a call of an ``...Error`` class."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if not name.endswith("Error"):
            continue
        for sub in ast.walk(node):
            text = sub.value if isinstance(sub, ast.Constant) else None
            if isinstance(text, str) and FLAG.search(text):
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
    assert _flag_messages(source, "probe") == ["probe:2: 'pass --force '"]
    assert _flag_messages('raise InvalidArgumentError("bad", param="overwrite")\n', "p") == []

"""``list``, ``get`` and ``exec`` without typer answer exactly as typer does, and leave to
typer every command line they do not read.

:mod:`agentsessions.cli.fast` reads their command line with
:mod:`agentsessions.cli.fastparse`, against the options :mod:`agentsessions.cli.parsegen`
wrote out from the typer definitions (:mod:`agentsessions.cli.gen.commandline`), and runs
the body typer runs. These tests hold the generated tables current, the fast answers equal
to typer's (output, error lines, exit status), what the fast parser reads equal to what
typer parses from the same words (a property over generated command lines), and the
shapes left to typer strict.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer import Exit
from typer._click.exceptions import ClickException

import agentsessions
from agentsessions.cli import fast, fastparse, parsegen
from agentsessions.cli.app import root_command
from agentsessions.cli.gen import commandline


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HOME", "SERVER", "TOKEN", "STORE", "KEY_FILE", "MASTER_KEY", "CONFIG"):
        monkeypatch.delenv(f"AGENTSESSIONS_{name}", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with sessions in two projects, one of them named by an origin, one that ran a
    turn (its uid in the file ``ran``)."""
    path = tmp_path / "home"
    with agentsessions.open(path) as engine:
        for i in range(3):
            engine.create(name=f"s{i}", labels={"n": str(i)})
        engine.create(name="acme", project="acme")
        engine.create(origin={"source": "github", "subject": "o/r#1"})
        ran = engine.run(None, ["hello"], harness="echo").session.uid
    (tmp_path / "ran").write_text(ran, encoding="utf-8")
    return path


def test_the_generated_tables_are_current() -> None:
    # stale: python -m agentsessions.cli.parsegen
    assert parsegen.TARGET.read_text(encoding="utf-8") == parsegen.source()
    assert set(commandline.COMMANDS) == set(parsegen.FAST_COMMANDS) == set(fast.BODIES)


@pytest.mark.parametrize("command", parsegen.FAST_COMMANDS)
def test_every_parameter_is_one_the_fast_parser_reads(command: str) -> None:
    # a parameter of another shape leaves the command to typer always: still correct, but
    # no longer fast, so say so here when it happens
    assert {row[2] for row in commandline.COMMANDS[command]} <= set(fastparse.KINDS)


def both(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[object, ...]:
    """(exit status, stdout, stderr) of ``argv`` answered fast, and as typer answers it."""
    code = fast.answer(argv)
    assert code is not None, f"{argv} was left to typer"
    ours = capsys.readouterr()
    theirs_code = root_command().main(argv, standalone_mode=False)
    theirs = capsys.readouterr()
    assert (code, ours.out, ours.err) == (theirs_code, theirs.out, theirs.err)
    return code, ours.out, ours.err


ANSWERED = [
    ["list"],
    ["list", "--json"],
    ["--json", "list"],
    ["list", "--project", "acme"],
    ["list", "-p", "acme", "--json"],
    ["list", "--project=nobody"],
    ["list", "--page-size", "2"],
    ["list", "--page-size=0", "--json"],
    ["list", "--page-size", "501"],
    ["list", "--cursor", "not-a-cursor"],
    ["list", "--origin", "source=github,subject=o/r#1", "--json"],
    ["list", "--origin", "source=github,subject=o/r#2"],
    ["list", "--origin", "nonsense"],
    ["list", "--project", "Bad Name!"],
]


@pytest.mark.parametrize("args", ANSWERED, ids=" ".join)
def test_list_answers_as_typer_does(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    both(["--home", str(home), *args], capsys)
    both([*args, "--home", str(home)], capsys)  # a root option after the command


GET_ANSWERED = [
    ["get", "{ran}"],
    ["get", "{ran}", "--json"],
    ["get", "--json", "{ran}"],
    ["get", "sess-00000000000000000000000a"],
    ["get", "not-a-uid"],
    ["get", "-"],
]


@pytest.mark.parametrize("args", GET_ANSWERED, ids=" ".join)
def test_get_answers_as_typer_does(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    ran = (home.parent / "ran").read_text(encoding="utf-8")
    args = [a.replace("{ran}", ran) for a in args]
    code, out, _ = both(["--home", str(home), *args], capsys)
    assert (code == 0) == (ran in args) and (ran in str(out)) == (ran in args)
    both([*args, "--home", str(home)], capsys)


EXEC_REFUSED = [
    ["exec", "not-a-uid", "-i", "x"],
    ["exec", "sess-00000000000000000000000a", "-i", "x"],
    ["exec", "--harness", "nope", "-i", "x"],
    ["exec", "--label", "novalue", "-i", "x"],
    ["exec", "--label", "a=1", "--label", "a=2", "-i", "x"],
    ["exec", "--durability", "never", "-i", "x"],
    ["exec", "--model", "bogus:spec", "-i", "x"],
    ["exec", "--config", "@/nonexistent/file", "-i", "x"],
    ["exec", "--origin", "nonsense", "-i", "x"],
    ["exec", "--actor", "nobody", "-i", "x"],
    ["exec", "{ran}", "--name", "renamed", "-i", "x"],
    ["exec", "--runtime", "nowhere", "-i", "x"],
]


@pytest.mark.parametrize("args", EXEC_REFUSED, ids=" ".join)
def test_exec_refuses_as_typer_does(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    ran = (home.parent / "ran").read_text(encoding="utf-8")
    code, _, err = both(["--home", str(home), *(a.replace("{ran}", ran) for a in args)], capsys)
    assert code != 0 and "agentsessions: error:" in str(err)


MASKS = (
    (re.compile(r"sess-[0-9a-f]{24}"), "UID"),
    (re.compile(r"\b[0-9a-f]{16,64}\b"), "HEX"),
    (re.compile(r"\d+"), "N"),
    (re.compile(r" +"), " "),  # right-aligned seqs: a later turn's are wider
)


def masked(text: str) -> str:
    """``text`` without what differs between two turns (uids, ids, hashes, times, seqs)."""
    for pattern, mask in MASKS:
        text = pattern.sub(mask, text)
    return text


@pytest.mark.parametrize(
    "args",
    [
        ["exec", "{ran}", "-i", "again"],
        ["exec", "{ran}", "--input=one", "--input", "two", "--json"],
        ["exec", "-i", "new", "--name", "n", "--label", "a=1", "--label", "b=2", "--wait", "1.5"],
        ["exec", "--origin", "source=github,subject=o/r#1", "-i", "hi", "--durability", "turn"],
    ],
    ids=["existing", "json", "new", "origin"],
)
def test_exec_runs_a_turn_as_typer_does(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    ran = (home.parent / "ran").read_text(encoding="utf-8")
    argv = ["--home", str(home), *(a.replace("{ran}", ran) for a in args)]
    assert fastparse.parse(argv) is not None
    code = fast.answer(argv)
    ours = capsys.readouterr()
    theirs_code = root_command().main(argv, standalone_mode=False)
    theirs = capsys.readouterr()
    assert code == theirs_code == 0
    assert masked(ours.out) == masked(theirs.out) and "echo:" in ours.out
    assert masked(ours.err) == masked(theirs.err)


def test_list_pages_follow_their_cursor(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = both(["--home", str(home), "list", "--page-size", "2", "--json"], capsys)
    assert code == 0 and '"next_cursor": ""' not in str(out)


@pytest.mark.parametrize(
    "args",
    [
        ["--home", "{missing}", "list"],
        ["--json", "--home", "{missing}", "list"],
        ["--home=", "list"],
        ["--home", "list", "list"],  # a command's name where the home goes: refused
        ["--home={missing}", "list", "--json"],
    ],
    ids=["missing", "missing-json", "empty", "command-word", "equals"],
)
def test_a_home_refused_as_typer_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    argv = [a.replace("{missing}", str(tmp_path / "nowhere")) for a in args]
    code, _, err = both(argv, capsys)
    assert code != 0 and "agentsessions: error:" in str(err)


def test_the_home_from_the_environment(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTSESSIONS_HOME", str(home))
    assert fastparse.parse(["list"]) is not None
    code, out, _ = both(["list"], capsys)
    assert code == 0 and "s2" in str(out)
    monkeypatch.setenv("AGENTSESSIONS_HOME", "")  # empty is unset, for click too
    parsed = fastparse.parse(["list"])
    assert parsed is not None and parsed.home is None


def test_parse_reads_repeated_values_and_numbers_as_typer_converts_them() -> None:
    parsed = fastparse.parse(["exec", "-i", "a", "--input=b", "--wait", "2", "--label", "k=v"])
    assert parsed is not None
    assert parsed.values["inputs"] == ["a", "b"] and parsed.values["label"] == ["k=v"]
    assert parsed.values["wait"] == 2.0 and isinstance(parsed.values["wait"], float)
    assert parsed.values["session"] is None and parsed.values["runtime"] == "auto"


def test_parse_reads_an_argument_where_it_stands() -> None:
    for argv in (["get", "--json", "u"], ["get", "u", "--json"], ["--json", "get", "u"]):
        parsed = fastparse.parse(argv)
        assert parsed is not None and parsed.values["session"] == "u"
        assert parsed.values["as_json"] or parsed.as_json


def test_parse_reads_values_as_typer_converts_them() -> None:
    parsed = fastparse.parse(["--home=h", "list", "-p", "x", "--page-size=07", "--cursor", ""])
    assert parsed is not None
    assert (parsed.command, parsed.home, parsed.home_typed, parsed.as_json) == (
        "list", "h", True, False,
    )  # fmt: skip
    assert parsed.values == {
        "project": "x", "page_size": 7, "cursor": "", "origin": "", "as_json": False,
    }  # fmt: skip


LEFT_TO_TYPER = [
    [],
    ["list", "--help"],
    ["list", "-h"],
    ["--help", "list"],
    ["list", "extra"],
    ["list", "--"],
    ["list", "--page-size", "-1"],
    ["list", "--page-size", "x"],
    ["list", "--page-size", " 1"],
    ["list", "--page-size"],
    ["list", "--json=1"],
    ["list", "-pacme"],
    ["list", "--proj", "acme"],
    ["list", "--project", "a", "--project", "b"],
    ["--home", "a", "list", "--home", "b"],
    ["--home", "--json", "list"],
    ["list", "--project", "-x"],
    ["--version", "list"],
    ["--server", "localhost:1", "list"],
    ["list", "--store", "nats://x"],
    ["--key-file", "k", "list"],
    ["list", "--allow-unsynced"],
    ["--install-completion", "list"],
    ["get"],
    ["get", "a", "b"],
    ["get", "--", "a"],
    ["get", "-x"],
    ["get", "a", "--help"],
    ["exec", "a", "b", "-i", "x"],
    ["exec", "-ix"],
    ["exec", "--input"],
    ["exec", "--wait", "1e3", "-i", "x"],
    ["exec", "--wait", "-1", "-i", "x"],
    ["exec", "--wait", ".5", "-i", "x"],
    ["exec", "--json", "--json", "-i", "x"],
    ["exec", "--help"],
    ["exec", "--", "-i"],
    ["lis"],
]


@pytest.mark.parametrize("args", LEFT_TO_TYPER, ids=" ".join)
def test_what_is_not_read_here_is_left_to_typer(args: list[str]) -> None:
    assert fastparse.parse(args) is None


@pytest.mark.parametrize("name", ["SERVER", "TOKEN", "STORE"])
def test_a_root_option_set_in_the_environment_leaves_list_to_typer(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv(f"AGENTSESSIONS_{name}", "x")
    assert fastparse.parse(["list"]) is None


def test_a_completion_request_is_left_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fast.COMPLETE_VAR, "bash_complete")
    assert fast.answer(["list"]) is None


ROOT_WORDS = [["--home", "h"], ["--home=h"], ["--json"], ["--server", "s"], ["-V"]]
COMMAND_WORDS = [
    ["--json"], ["-p", "acme"], ["--project", "x"], ["--page-size", "3"], ["--page-size", "007"],
    ["--page-size", "-1"], ["--page-size"], ["--cursor", "c"], ["--origin", "o=1"], ["-i", "x"],
    ["--input=y"], ["-i"], ["--wait", "1.5"], ["--wait", "2"], ["--wait", "1e3"],
    ["--label", "a=1"], ["--name", "n"], ["--runtime", "local"], ["--fresh-start"],
    ["sess-00000000000000000000000a"], ["x"], ["--home", "h"], ["--home=h"], ["--"], ["-"],
    ["--help"], ["-V"], ["--store=s"], ["--json=1"],
]  # fmt: skip
"""Pieces of a command line for the fast commands, right and wrong."""


def joined(root: list[list[str]], command: str, tail: list[list[str]]) -> list[str]:
    """A command line: the root's pieces, the command, its pieces."""
    return [*(w for piece in root for w in piece), command, *(w for piece in tail for w in piece)]


COMMAND_LINES = st.builds(
    joined,
    st.lists(st.sampled_from(ROOT_WORDS), max_size=2),
    st.sampled_from(["list", "get", "exec", "log"]),
    st.lists(st.sampled_from(COMMAND_WORDS), max_size=5),
)


def typer_params(argv: list[str]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The root's and the command's parameters as typer parses ``argv`` (nothing run), or
    None when it refuses it."""
    root = root_command()
    try:
        ctx = root.make_context("agentsessions", list(argv))
        name, command, rest = root.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
        assert command is not None and name is not None
        sub = command.make_context(name, rest, parent=ctx)
    except (ClickException, Exit):
        return None
    return ctx.params, sub.params


def plain(value: Any) -> Any:
    """A parameter's value as the command's body gets it (typer hands a repeatable
    option's tuple over as a list, an empty one as None)."""
    return (list(value) or None) if isinstance(value, tuple) else value


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(COMMAND_LINES)
@example(["--json", "exec", "-i", "x", "--input=y", "--wait", "2", "--label", "a=1", "--home=h"])
def test_what_the_fast_parser_reads_typer_reads_the_same(argv: list[str]) -> None:
    parsed = fastparse.parse(argv, environ={})
    if parsed is None:
        return  # typer's to answer: nothing to compare
    params = typer_params(argv)
    assert params is not None, f"typer refuses {argv}"
    root, command = params
    assert {k: plain(v) for k, v in command.items()} == parsed.values
    assert (root["home"], root["as_json"]) == (parsed.home, parsed.as_json)
    unread = {k: v for k, v in root.items() if k not in fastparse.HONOURED}
    assert all(not v for v in unread.values()), unread

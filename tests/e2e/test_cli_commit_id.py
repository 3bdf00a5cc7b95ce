"""``exec --commit-id`` as a user drives it: a retry with an id that landed prints the landed
turn (``duplicate`` in ``--json``) and writes nothing; a bad id or a new session is refused
with one line and exit 2."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clirun import Cli


def test_exec_with_a_commit_id_lands_once(cli: Cli) -> None:
    uid = cli.run("create", "--harness", "echo", "--json").ok().json()["uid"]
    first = cli.run("exec", uid, "--commit-id", "gh-1", "--input", "hi", "--json").ok().json()
    assert first["duplicate"] is False and first["model_calls"] == 1
    again = cli.run("exec", uid, "--commit-id", "gh-1", "--input", "hi", "--json").ok().json()
    assert again["duplicate"] is True and again["model_calls"] == 0
    assert (again["first_seq"], again["last_seq"]) == (first["first_seq"], first["last_seq"])
    assert cli.run("exec", uid, "--commit-id", "gh-1", "--input", "hi").ok().out == "echo:hi\n"
    assert cli.run("get", uid, "--json").ok().json()["last_seq"] == first["last_seq"]


def test_a_bad_commit_id_or_a_new_session_is_refused(cli: Cli) -> None:
    cli.run("exec", "--commit-id", "gh-1", "--input", "hi").fails(2)
    uid = cli.run("create", "--harness", "echo", "--json").ok().json()["uid"]
    cli.run("exec", uid, "--commit-id", "x" * 200, "--input", "hi").fails(2)
    assert cli.run("get", uid, "--json").ok().json()["last_seq"] == 0

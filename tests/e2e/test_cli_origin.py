"""``--origin``, ``--identity`` and ``--actor`` as a user types them: ``create``, ``exec``
by origin (reused, never a second session), ``list --origin`` (one lookup), ``get`` and
``log`` showing them, ``--json`` carrying them, export and import keeping them, and the
token flag that lets a producer name authors. Bad values are one line and exit 2."""

from __future__ import annotations

from pathlib import Path

from clirun import Cli

ORIGIN = "source=github,subject=owner/repo#12,uri=https://github.com/o/r/issues/12,attr.repo=o/r"
ISSUE = {
    "source": "github",
    "subject": "owner/repo#12",
    "uri": "https://github.com/o/r/issues/12",
    "attributes": {"repo": "o/r"},
}


def test_exec_by_origin_creates_then_reuses_and_list_finds_it(cli: Cli) -> None:
    first = cli.fast(
        "exec", "--origin", ORIGIN, "--identity", "principal=app/bot,issuer=github",
        "--actor", "principal=octocat,issuer=github", "--input", "a comment", "--harness",
        "echo", "--json",
    ).ok()  # fmt: skip
    uid = first.json()["uid"]
    assert first.json()["created"]
    second = cli.fast("exec", "--origin", "source=github,subject=owner/repo#12", "-i", "more")
    assert second.ok().out.strip() == "echo:more"
    listed = cli.fast("list", "--origin", "source=github,subject=owner/repo#12", "--json").ok()
    [row] = listed.json()["sessions"]
    assert (row["uid"], row["origin"]) == (uid, ISSUE)
    assert row["identity"] == {"principal": "app/bot", "issuer": "github"}
    assert [r["uid"] for r in cli.fast("list", "--json").ok().json()["sessions"]] == [uid]
    none = cli.fast("list", "--origin", "source=github,subject=owner/repo#13", "--json").ok()
    assert none.json() == {"sessions": [], "next_cursor": ""}
    shown = cli.fast("get", uid).ok().out
    assert "github  owner/repo#12  https://github.com/o/r/issues/12  repo=o/r" in shown
    assert "app/bot (github)" in shown
    log = cli.fast("log", uid).ok().out.splitlines()
    inputs = [line for line in log if " INPUT " in line]
    assert inputs[0].endswith("[octocat@github] user: a comment")
    assert inputs[1].endswith(" user: more")  # no author: nothing shown
    records = cli.fast("log", uid, "--json").ok().json_lines()
    assert records[1]["event"]["actor"] == {"principal": "octocat", "issuer": "github"}


def test_create_with_an_origin_is_one_session(cli: Cli) -> None:
    uid = cli.create("--origin", ORIGIN, "--identity", "principal=me")
    made = cli.fast("get", uid, "--json").ok().json()
    assert (made["origin"], made["identity"]) == (ISSUE, {"principal": "me"})
    again = cli.fast("create", "--origin", "source=github,subject=owner/repo#12").fails(2)
    assert uid in again.err
    ran = cli.fast("exec", "--origin", "source=github,subject=owner/repo#12", "-i", "x", "--json")
    assert ran.ok().json()["uid"] == uid


def test_export_then_import_elsewhere_is_found_by_origin(cli: Cli, tmp_path: Path) -> None:
    uid = cli.create("--origin", ORIGIN)
    cli.fast("export", uid, "-o", str(tmp_path / "s.jsonl")).ok()
    other = Cli(tmp_path / "other", cli.cwd)
    moved = other.fast("import", str(tmp_path / "s.jsonl"), "--json").ok().json()
    assert moved["origin"] == ISSUE
    found = other.fast("list", "--origin", ORIGIN, "--json").ok().json()["sessions"]
    assert [s["uid"] for s in found] == [moved["uid"]]
    cli.fast("import", str(tmp_path / "s.jsonl")).fails(2)  # the origin has its session here


def test_bad_values_are_one_line_and_exit_2(cli: Cli) -> None:
    for args in (
        ("create", "--origin", "source=github"),
        ("create", "--origin", "subject=x"),
        ("create", "--origin", "source=g,subject=x,colour=red"),
        ("create", "--origin", "nonsense"),
        ("create", "--identity", "name=x"),
        ("exec", "--actor", "principal=", "-i", "x"),
        ("list", "--origin", "source=g"),
    ):
        cli.fast(*args).fails(2)
    assert cli.fast("list", "--json").ok().json()["sessions"] == []  # nothing was made


def test_a_comma_inside_a_value_is_kept(cli: Cli) -> None:
    uid = cli.create("--origin", "source=web,subject=a,b,uri=https://x/?q=1,2")
    made = cli.fast("get", uid, "--json").ok().json()
    assert made["origin"] == {"source": "web", "subject": "a,b", "uri": "https://x/?q=1,2"}


def test_token_create_name_authors(cli: Cli) -> None:
    made = cli.fast("token", "create", "-p", "a", "--name-authors", "--json").ok().json()
    plain = cli.fast("token", "create", "-p", "a", "--json").ok().json()
    assert (made["name_authors"], plain["name_authors"]) == (True, False)
    text = cli.fast("token", "create", "-p", "a", "--name", "gh", "--name-authors").ok().err
    assert "(names authors)" in text

"""The CLI as a user drives it: create, list, get, log, verify, export, import, delete, reindex.

The demo has its own tests (test_demo.py), the controller's commands theirs (test_cli_turns.py).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agentsessions.errors import SessionDeletedError
from agentsessions.journal.stores.file.store import FileStore

if TYPE_CHECKING:
    from clirun import Cli

COMMANDS = [
    "create", "list", "get", "log", "verify", "export", "import", "delete", "reindex", "demo",
]  # fmt: skip
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def wire_chain(cli: Cli, uid: str) -> list[tuple[str, str, str]]:
    """(seq, prev_hash, content_hash) of every record of ``uid``, read with ``log --json``."""
    return [
        (r["seq"], r.get("prev_hash", ""), r["content_hash"])
        for r in cli.fast("log", uid, "--json").ok().json_lines()
    ]


# --- help ----------------------------------------------------------------------------------


def test_help_paragraphs_fill_an_80_column_terminal() -> None:
    """Help text wraps to the terminal, not to the line breaks of the source docstrings."""
    from typer.testing import CliRunner

    from agentsessions.cli.app import app

    turns = ["exec", "replay", "resume", "suspend", "fork", "follow", "cancel"]
    groups = [["compute", "list"], ["compute", "stop"]]
    groups += [["harness", verb] for verb in ("serve", "register", "list", "retire")]
    for command in [*([c] for c in [*COMMANDS, *turns]), *groups]:
        out = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "80"}).stdout
        text = "\n".join(line.strip() for line in out.split("Usage:")[1].split("╭")[0].splitlines())
        paragraphs = [p.splitlines() for p in text.strip().split("\n\n")[1:]]  # after usage
        assert paragraphs, command
        for lines in paragraphs:
            assert all(len(line) > 55 for line in lines[:-1]), (command, lines)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_explains_itself_and_takes_json(cli: Cli, command: str) -> None:
    out = cli.fast(command, "--help").ok().out
    assert "--json" in out
    assert "Example" in out


def test_bare_command_prints_help_and_version_works(cli: Cli) -> None:
    out = cli.fast(home=False).ok().out
    assert "Usage" in out and "verify" in out
    assert cli.fast("--version", home=False).ok().out.startswith("agentsessions ")


# --- create / list / get -------------------------------------------------------------------


def test_create_prints_the_uid_and_get_shows_the_metadata(cli: Cli) -> None:
    uid = (
        cli.fast(
            "create",
            "--project",
            "acme",
            "--name",
            "triage",
            "--harness",
            "chat",
            "--model",
            "openai:echo-1",
            "--label",
            "team=ml",
            "--label",
            "tier=gold",
            "--annotation",
            "note=a=b",
        )
        .ok()
        .out.strip()
    )
    assert uid.startswith("sess-") and len(uid) == 29
    got = cli.fast("get", uid, "--json").ok().json()
    assert got["uid"] == uid and got["project"] == "acme" and got["name"] == "triage"
    assert got["harness"] == "chat" and got["model"] == "openai:echo-1"
    assert got["labels"] == {"team": "ml", "tier": "gold"}
    assert got["annotations"] == {"note": "a=b"}
    assert got["last_seq"] == 0 and got["deleted"] is False
    human = cli.fast("get", uid).ok().out
    assert uid in human and "triage" in human and "team=ml" in human


def test_create_json_is_the_session_object(cli: Cli) -> None:
    obj = cli.fast("create", "--name", "n1", "--json").ok().json()
    assert obj["name"] == "n1" and obj["project"] == "default"
    assert cli.fast("get", obj["uid"], "--json").ok().json()["uid"] == obj["uid"]


def test_list_pages_newest_first_without_skips_or_repeats(cli: Cli) -> None:
    created = [cli.create("--project", "paged", "--name", f"s{i}") for i in range(7)]
    cli.create("--project", "other")
    seen: list[str] = []
    cursor = ""
    pages = 0
    while True:
        args = ["list", "--project", "paged", "--page-size", "3", "--json"]
        page = cli.fast(*args, *(["--cursor", cursor] if cursor else [])).ok().json()
        pages += 1
        assert len(page["sessions"]) <= 3
        seen += [s["uid"] for s in page["sessions"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert pages == 3
    assert seen == list(reversed(created))


def test_list_table_shows_sessions_and_the_next_cursor(cli: Cli) -> None:
    uids = [cli.create("--name", f"table-{i}", "--harness", "echo") for i in range(3)]
    out = cli.fast("list", "--page-size", "2").ok().out
    assert uids[2] in out and uids[1] in out and uids[0] not in out
    assert "table-2" in out and "echo" in out and "NONE" in out
    cursor = cli.fast("list", "--page-size", "2", "--json").ok().json()["next_cursor"]
    assert f"--cursor {cursor}" in out
    rest = cli.fast("list", "--page-size", "2", "--cursor", cursor).ok().out
    assert uids[0] in rest and "--cursor" not in rest


def test_reindex_brings_back_a_session_a_crash_left_out_of_list(cli: Cli, home: Path) -> None:
    """A crash between a session's directory and its index row hides it from list only."""
    kept, lost = cli.create("--name", "kept"), cli.create("--name", "lost")
    with sqlite3.connect(home / "catalog.sqlite3") as db:
        db.execute("DELETE FROM sessions WHERE uid=?", (lost,))
    listed = [s["uid"] for s in cli.fast("list", "--json").ok().json()["sessions"]]
    assert listed == [kept]
    cli.fast("get", lost).ok()  # still there, just not indexed
    out = cli.fast("reindex", "--json").ok().json()
    assert out["sessions"] == 2 and out["catalog"].endswith("catalog.sqlite3")
    listed = [s["uid"] for s in cli.fast("list", "--json").ok().json()["sessions"]]
    assert listed == [lost, kept]
    assert "indexed 2 sessions" in cli.fast("reindex").ok().out


def test_piped_tables_carry_no_trailing_spaces(cli: Cli) -> None:
    """Output to a pipe or file is laid out wide, but no line ends in padding."""
    cli.create("--name", "x")
    uid = cli.import_fixture()
    for args in (("list",), ("log", uid), ("get", uid)):
        out = cli.fast(*args, env={"COLUMNS": ""}).ok().out
        assert out.strip() and all(line == line.rstrip() for line in out.splitlines()), args


def test_list_of_an_empty_project_says_so(cli: Cli) -> None:
    assert "no sessions" in cli.fast("list", "--project", "empty").ok().out
    assert cli.fast("list", "--project", "empty", "--json").ok().json() == {
        "sessions": [],
        "next_cursor": "",
    }


def test_home_comes_from_the_environment_when_not_given(cli: Cli, tmp_path: Path) -> None:
    env_home = tmp_path / "from-env"
    uid = cli.run("create", home=False, env={"AGENTSESSIONS_HOME": str(env_home)}).ok().out.strip()
    assert (env_home / "sessions" / uid).is_dir()
    xdg = tmp_path / "xdg"
    env = {"XDG_DATA_HOME": str(xdg), "HOME": str(tmp_path / "user")}
    uid = cli.run("create", home=False, env=env).ok().out.strip()
    assert (xdg / "agentsessions" / "sessions" / uid).is_dir()


# --- import / log / verify -----------------------------------------------------------------


def test_import_of_the_go_fixture_keeps_its_hashes_and_verifies(
    cli: Cli, go_fixture: Path, go_records: list[dict[str, Any]]
) -> None:
    uid = (
        cli.fast("import", str(go_fixture), "--project", "go", "--name", "from-go").ok().out.strip()
    )
    info = cli.fast("get", uid, "--json").ok().json()
    expected = go_records
    assert info["project"] == "go" and info["name"] == "from-go"
    assert info["last_seq"] == len(expected) and info["last_hash"] == expected[-1]["Hash"]
    assert wire_chain(cli, uid) == [(str(r["Seq"]), r["PrevHash"], r["Hash"]) for r in expected]
    assert "4 records verified" in cli.fast("verify", uid).ok().out
    report = cli.fast("verify", uid, "--strict", "--json").ok().json()
    assert report["ok"] is True and report["records"] == 4 and report["strict"] is True


def test_log_table_reads_like_the_conversation(cli: Cli, go_records: list[dict[str, Any]]) -> None:
    uid = cli.import_fixture()
    out = cli.fast("log", uid).ok().out
    for text in ("INPUT", "MODEL_CALL", "OUTPUT", "END", "user: hello", "echo:hello", "COMPLETED"):
        assert text in out
    assert go_records[0]["Hash"][:12] in out


def test_log_json_is_one_logrecord_per_line(cli: Cli) -> None:
    uid = cli.import_fixture()
    run = cli.fast("log", uid, "--json").ok()
    lines = run.json_lines()
    assert len(lines) == 4 and run.err == ""
    prev = ""
    for n, record in enumerate(lines, start=1):
        assert record["seq"] == str(n)
        # proto3-JSON omits the empty prev_hash of the first record
        assert record.get("prev_hash", "") == prev and (n == 1 or "prev_hash" in record)
        assert len(record["content_hash"]) == 64
        assert record["event"]["kind"].startswith("EVENT_")
        prev = record["content_hash"]
    assert lines[0]["event"]["message"]["parts"][0]["text"]["text"] == "hello"
    window = cli.fast("log", uid, "--from", "2", "--to", "3", "--json").ok().json_lines()
    assert [r["seq"] for r in window] == ["2", "3"]


def test_log_json_lines_import_back_with_the_same_hashes(cli: Cli, tmp_path: Path) -> None:
    uid = cli.import_fixture()
    lines = tmp_path / "wire.jsonl"
    lines.write_text(cli.fast("log", uid, "--json").ok().out, encoding="utf-8")
    again = cli.fast("import", str(lines), "--json").ok().json()["uid"]
    assert wire_chain(cli, again) == wire_chain(cli, uid)


def test_verify_all_covers_every_session(cli: Cli) -> None:
    uids = {cli.import_fixture(), cli.import_fixture(), cli.create()}
    result = cli.fast("verify", "--all", "--json").ok().json()
    assert result["ok"] is True
    assert {r["uid"] for r in result["reports"]} == uids


def test_verify_accepts_a_session_directory_as_a_path(cli: Cli) -> None:
    uid = cli.import_fixture()
    sdir = cli.home / "sessions" / uid
    assert cli.fast("verify", str(sdir)).ok().out.count("✓") == 1
    assert cli.fast("verify", "--path", str(sdir), "--json").ok().json()["records"] == 4


# --- export / import round trip ------------------------------------------------------------


@pytest.mark.parametrize("compress", [True, False], ids=["zstd", "no-compress"])
def test_export_import_round_trip_keeps_seqs_and_hashes(
    cli: Cli, tmp_path: Path, compress: bool
) -> None:
    uid = cli.import_fixture("--name", "original")
    out = tmp_path / "copy.agx"
    args = ["export", uid, "-o", str(out), "--json"] + ([] if compress else ["--no-compress"])
    summary = cli.fast(*args).ok().json()
    assert summary["records"] == 4 and summary["compressed"] is compress
    head = out.read_bytes()[:32]
    assert head.startswith(ZSTD_MAGIC) if compress else head.startswith(b'{"agentsessions_export":')
    assert cli.fast("verify", str(out)).ok().out.count("✓") == 1
    new = cli.fast("import", str(out), "--name", "copy").ok().out.strip()
    assert new != uid
    assert wire_chain(cli, new) == wire_chain(cli, uid)
    assert cli.fast("get", new, "--json").ok().json()["name"] == "copy"
    assert cli.fast("log", new, "--json").ok().out == cli.fast("log", uid, "--json").ok().out


def test_export_refuses_to_overwrite_unless_forced(cli: Cli, tmp_path: Path) -> None:
    uid = cli.import_fixture()
    out = tmp_path / "exists.agx"
    out.write_bytes(b"keep me")
    cli.fast("export", uid, "-o", str(out), "--no-compress").fails(2)
    assert out.read_bytes() == b"keep me"
    cli.fast("export", uid, "-o", str(out), "--no-compress", "--force").ok()
    assert out.read_bytes().startswith(b'{"agentsessions_export":')


# --- delete --------------------------------------------------------------------------------


def test_delete_hides_the_session_but_keeps_it_readable(cli: Cli, home: Path) -> None:
    uid = cli.import_fixture()
    keep = cli.create()
    deleted = cli.fast("delete", uid, "--json").ok().json()
    assert deleted["uid"] == uid and deleted["deleted"] is True
    listed = [s["uid"] for s in cli.fast("list", "--json").ok().json()["sessions"]]
    assert listed == [keep]
    assert cli.fast("get", uid, "--json").ok().json()["deleted"] is True
    assert len(cli.fast("log", uid, "--json").ok().json_lines()) == 4
    cli.fast("verify", uid).ok()
    store = FileStore(home)
    try:
        with pytest.raises(SessionDeletedError):
            store.writer(uid)
    finally:
        store.close()


# --- home ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("platform", "env", "expected"),
    [
        ("linux", {}, "/u/.local/share/agentsessions"),
        ("linux", {"XDG_DATA_HOME": "/data"}, "/data/agentsessions"),
        ("linux", {"XDG_DATA_HOME": "relative"}, "/u/.local/share/agentsessions"),
        ("darwin", {"XDG_DATA_HOME": "/data"}, "/u/Library/Application Support/agentsessions"),
        ("win32", {"LOCALAPPDATA": "C:\\Users\\u\\AppData\\Local"}, None),
    ],
)
def test_default_home_follows_the_platform_convention(
    platform: str, env: dict[str, str], expected: str | None
) -> None:
    from agentsessions.sessions.home import default_home

    got = default_home(env, platform, user_home="/u")
    if expected is None:
        assert str(got) == "C:\\Users\\u\\AppData\\Local\\agentsessions"
    else:
        assert got.as_posix() == expected

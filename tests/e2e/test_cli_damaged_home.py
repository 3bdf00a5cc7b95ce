"""Issue 7 (metadata part) as a user meets it: a damaged session.json, a read-only home,
and an empty --home. Each failure is one named error line and a stable exit code."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from clirun import Run, clean_env

if TYPE_CHECKING:
    from clirun import Cli

CORRUPT = 8
STORAGE = 13
USAGE = 2


def _damage(cli: Cli, uid: str) -> Path:
    path = cli.home / "sessions" / uid / "session.json"
    text = path.read_text()
    path.write_text(text[: len(text) // 2])  # torn in the middle: not JSON any more
    return path


@pytest.fixture
def damaged(cli: Cli) -> tuple[str, str, Path]:
    """(damaged uid, healthy uid, the damaged file): the healthy one sorts after it."""
    uids = sorted([cli.import_fixture(), cli.import_fixture()])
    return uids[0], uids[1], _damage(cli, uids[0])


@pytest.mark.parametrize("command", ["get", "log", "exec", "export"])
def test_reading_a_damaged_session_names_it_and_the_file(
    cli: Cli, damaged: tuple[str, str, Path], command: str
) -> None:
    """Main said 'invalid JSON: ... (byte 67)' with exit 10, naming neither."""
    uid, _good, path = damaged
    extra = {"exec": ["-i", "hi"], "export": ["-o", str(cli.cwd / "x.agx")]}.get(command, [])
    run = cli.fast(command, uid, *extra).fails(CORRUPT)
    assert uid in run.err and str(path) in run.err and "damaged metadata" in run.err
    assert not (cli.cwd / "x.agx").exists()


@pytest.mark.parametrize("how", ["uid", "path"])
def test_verify_fails_a_damaged_session(cli: Cli, damaged: tuple[str, str, Path], how: str) -> None:
    """verify PATH passed it on main; verify UID exited 10 without a report."""
    uid, _good, path = damaged
    run = cli.fast("verify", uid if how == "uid" else str(path.parent))
    assert run.code == CORRUPT, run.err
    assert f"✗ {uid if how == 'uid' else path.parent}: FAILED: " in run.out
    assert str(path) in run.out and str(path) in run.err


def test_verify_all_reports_every_session(cli: Cli, damaged: tuple[str, str, Path]) -> None:
    """Main stopped at the first bad session, never reaching the healthy one."""
    uid, good, path = damaged
    run = cli.fast("verify", "--all")
    assert run.code == CORRUPT, run.err
    lines = run.out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"✗ {uid}: FAILED: ") and str(path) in lines[0]
    assert lines[1].startswith(f"✓ {good}: 4 records verified")
    out = cli.fast("verify", "--all", "--json").json()
    assert out["ok"] is False
    assert [(r["uid"], r["ok"], r["kind"]) for r in out["reports"]] == [
        (uid, False, "corrupt"),
        (good, True, ""),
    ]


def test_verify_all_exits_with_the_first_failure_in_uid_order(cli: Cli) -> None:
    uids = sorted([cli.import_fixture(), cli.import_fixture()])
    (cli.home / "sessions" / uids[1] / "journal").rename(cli.cwd / "gone")  # exit 10 kind
    _damage(cli, uids[0])  # exit 8, and first
    run = cli.fast("verify", "--all")
    assert run.code == CORRUPT and run.err.startswith(f"agentsessions: error: {uids[0]} ")
    assert "(and 1 more)" in run.err


def test_list_shows_the_damaged_session(cli: Cli, damaged: tuple[str, str, Path]) -> None:
    """Main either failed the whole listing or (after a reindex) dropped the session."""
    uid, good, _path = damaged
    run = cli.fast("list").ok()
    row = next(line for line in run.out.splitlines() if line.startswith(uid))
    assert "damaged: session.json is not valid JSON" in row
    rows = {s["uid"]: s for s in cli.fast("list", "--json").ok().json()["sessions"]}
    assert set(rows) == {uid, good}
    assert rows[uid]["damaged"].startswith("session.json is not valid JSON")
    assert "damaged" not in rows[good]


def test_reindex_warns_about_a_damaged_session(cli: Cli, damaged: tuple[str, str, Path]) -> None:
    uid, _good, _path = damaged
    run = cli.fast("reindex").ok()
    assert run.err.startswith(f"agentsessions: warning: not indexed: session {uid}")
    out = cli.fast("reindex", "--json").ok().json()
    assert [d["uid"] for d in out["damaged"]] == [uid]
    assert uid in [s["uid"] for s in cli.fast("list", "--json").ok().json()["sessions"]]


# --- an empty home -------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["flag", "flag=", "env"])
def test_an_empty_home_is_refused(cli: Cli, how: str) -> None:
    """Main wrote sessions/ and catalog.sqlite3 into the current directory."""
    args = {"flag": ["--home", ""], "flag=": ["--home="], "env": []}[how]
    env = {"AGENTSESSIONS_HOME": ""} if how == "env" else None
    for command in (["list"], ["create"]):
        run = cli.run(*args, *command, env=env, home=False).fails(USAGE)
        source = "AGENTSESSIONS_HOME" if how == "env" else "--home"
        assert run.err.startswith(f"agentsessions: error: {source} is empty")
    assert list(cli.cwd.iterdir()) == []


# --- a real read-only mount ----------------------------------------------------------------


def _ro_runner(tmp_path: Path, home: Path) -> Callable[..., Run]:
    """Run the CLI on ``home`` bind-mounted read-only in a private mount namespace."""
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        pytest.skip("needs Linux unshare(1) for a private read-only mount")
    mnt = tmp_path / "ro"
    mnt.mkdir()
    setup = f"mount --bind {shlex.quote(str(home))} {shlex.quote(str(mnt))} && "
    setup += f"mount -o remount,bind,ro {shlex.quote(str(mnt))}"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", setup], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a read-only mount here: {probe.stderr.decode().strip()}")

    def run(*args: str) -> Run:
        argv = [sys.executable, "-m", "agentsessions", "--home", str(mnt), *args]
        script = f"{setup} && exec {shlex.join(argv)}"
        proc = subprocess.run(
            ["unshare", "-m", "sh", "-c", script],
            cwd=tmp_path,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        return Run(args, proc.returncode, proc.stdout, proc.stderr)

    return run


def test_a_read_only_home_reads_and_refuses_writes(
    cli: Cli, tmp_path: Path, unchanged: Callable[[Path], Callable[[], None]]
) -> None:
    """Main failed every command here with exit 13 'cannot open the session catalog'."""
    uid = cli.import_fixture()
    export = tmp_path / "copy.agx"
    cli.fast("export", uid, "-o", str(export)).ok()
    ro = _ro_runner(tmp_path, cli.home)
    check = unchanged(cli.home)
    names = sorted(p.name for p in cli.home.rglob("*"))
    assert [s["uid"] for s in ro("list", "--json").ok().json()["sessions"]] == [uid]
    assert ro("get", uid, "--json").ok().json()["last_seq"] == 4
    assert len(ro("log", uid, "--json").ok().json_lines()) == 4
    assert ro("verify", uid).ok().out.startswith(f"✓ {uid}: 4 records verified")
    ro("verify", "--all").ok()
    ro("export", uid, "-o", str(tmp_path / "again.agx")).ok()
    for args in (["create"], ["exec", uid, "-i", "hi"], ["delete", uid], ["import", str(export)]):
        run = ro(*args).fails(STORAGE)
        assert "is read-only" in run.err and str(tmp_path / "ro") in run.err
    check()
    assert sorted(p.name for p in cli.home.rglob("*")) == names  # not even a -shm file


def test_resolve_home_refuses_empty_values() -> None:
    from agentsessions.errors import InvalidArgumentError
    from agentsessions.sessions.home import resolve_home

    for explicit, env in (("", {}), (None, {"AGENTSESSIONS_HOME": ""})):
        with pytest.raises(InvalidArgumentError):
            resolve_home(explicit, env)
    assert str(resolve_home(None, {"AGENTSESSIONS_HOME": "/x"})) == "/x"


def test_list_warns_about_a_damaged_session_it_cannot_index(
    cli: Cli, damaged: tuple[str, str, Path]
) -> None:
    """A lost catalog is rebuilt on open; a session whose project is unreadable gets no row,
    so list says so on stderr instead of dropping it silently."""
    uid, good, _path = damaged
    (cli.home / "catalog.sqlite3").unlink()
    run = cli.fast("list", "--json").ok()
    assert [s["uid"] for s in run.json()["sessions"]] == [good]
    assert run.err.startswith(f"agentsessions: warning: not listed: session {uid}")


def test_list_over_server_warns_as_list_does_locally(
    cli: Cli, damaged: tuple[str, str, Path]
) -> None:
    """The daemon's store rebuilt the catalog on open: serve says which session it could
    not index, and ``list --server`` forwards the same warning (ListSessions.not_listed)."""
    from test_serve import remote, served

    uid, good, _path = damaged
    (cli.home / "catalog.sqlite3").unlink()
    with served(cli.home) as daemon:
        run = remote(daemon.address, cli.cwd, "list", "--json").ok()
        assert [s["uid"] for s in run.json()["sessions"]] == [good]
        assert run.err.startswith(f"agentsessions: warning: not listed: session {uid}")
        code, err = daemon.stop()
    assert code == 0
    assert f"agentsessions: warning: not listed: session {uid}" in err


@pytest.mark.parametrize("removed", ["session.json", "directory"])
def test_a_session_missing_its_metadata_or_directory_breaks_no_listing(
    cli: Cli, removed: str
) -> None:
    """Main: one session.json (or session directory) removed by hand made `list` exit 3 for
    the whole home, and `verify --all` exit 3 without a report; a reindex then hid it."""
    uids = sorted([cli.import_fixture(), cli.import_fixture()])
    sdir = cli.home / "sessions" / uids[0]
    if removed == "directory":
        shutil.rmtree(sdir)
    else:
        (sdir / "session.json").unlink()
    rows = {s["uid"]: s for s in cli.fast("list", "--json").ok().json()["sessions"]}
    assert set(rows) == set(uids) and "damaged" not in rows[uids[1]]
    assert rows[uids[0]]["damaged"]
    run = cli.fast("verify", "--all")
    if removed == "directory":  # nothing left to verify: the healthy one passes
        assert run.code == 0 and run.out.startswith(f"✓ {uids[1]}: 4 records verified")
        cli.fast("get", uids[0]).fails(3)
        return
    assert run.code == CORRUPT, run.err
    assert run.out.splitlines()[0].startswith(f"✗ {uids[0]}: FAILED: ")
    assert f"✓ {uids[1]}: 4 records verified" in run.out
    for command in ("get", "log", "verify"):
        err = cli.fast(command, uids[0]).fails(CORRUPT).err
        assert "damaged metadata" in err and str(sdir / "session.json") in err
    cli.fast("reindex").ok()
    rows = {s["uid"]: s for s in cli.fast("list", "--json").ok().json()["sessions"]}
    assert rows[uids[0]]["damaged"].startswith("session.json cannot be read")


@pytest.mark.parametrize("field", ["project", "create_time_ns"])
def test_a_changed_field_is_exit_8_naming_it(cli: Cli, field: str) -> None:
    """Issue 18: `default` flipped to `defzult` passed verify and moved the session out of
    its project; now verify, get and log exit 8 naming the file and the field, and list
    shows the row as damaged with no project."""
    uid = cli.import_fixture()
    path = cli.home / "sessions" / uid / "session.json"
    old = path.read_bytes()
    at = old.index(f'"{field}":'.encode()) + len(field) + 4  # a byte inside the value
    path.write_bytes(old[:at] + bytes([old[at] ^ 0x01]) + old[at + 1 :])
    for command in ("verify", "get", "log"):
        run = cli.fast(command, uid).fails(CORRUPT)
        assert str(path) in run.err and f"has a {field!r}" in run.err, (command, run.err)
    rows = {s["uid"]: s for s in cli.fast("list", "--json").ok().json()["sessions"]}
    assert rows[uid]["project"] == "" and field in rows[uid]["damaged"]

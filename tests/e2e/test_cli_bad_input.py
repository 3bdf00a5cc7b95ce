"""Bad input: one error line on stderr, a distinct exit code, and every committed byte intact."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agentsessions.journal.stores.file.store import FileStore, StoreOptions
from agentsessions.journal.stores.store import SessionMeta, new_uid

if TYPE_CHECKING:
    from clirun import Cli

Unchanged = Callable[[Path], Callable[[], None]]

EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_BUSY = 6
EXIT_CORRUPT = 8
EXIT_CHAIN = 9
EXIT_FORMAT = 10
UNKNOWN_UID = "sess-" + "0" * 24
MALFORMED_IDS = ["../etc", "/abs/path", "sess-XYZ", "sess-" + "A" * 24, "sess-0123", ""]
BAD_PROJECTS = ["a/b", "a\\b", "a\x01b", "tab\there", "..", ""]


def say(text: str) -> dict[str, Any]:
    """A user INPUT event in proto3-JSON."""
    return {"kind": "EVENT_INPUT", "message": {"role": "user", "parts": [{"text": {"text": text}}]}}


def seed(home: Path, commits: int = 5, *, options: StoreOptions | None = None) -> str:
    """A session with ``commits`` one-event commits ("message number 0".."N-1")."""
    store = FileStore(home, options=options)
    try:
        uid = store.create(SessionMeta(uid=new_uid(), create_time_ns=time.time_ns())).uid
        with store.writer(uid) as writer:
            for i in range(commits):
                writer.append([say(f"message number {i} " + "x" * 200)])
    finally:
        store.close()
    return uid


def segments(home: Path, uid: str) -> list[Path]:
    """The session's segment files, oldest first."""
    return sorted((home / "sessions" / uid / "journal").glob("*.seg*"))


@pytest.fixture
def populated(cli: Cli, home: Path) -> Iterator[str]:
    """A home with one imported session and one seeded with several commits."""
    cli.import_fixture()
    yield seed(home)


def listed(cli: Cli) -> list[str]:
    return [s["uid"] for s in cli.fast("list", "--json").ok().json()["sessions"]]


# --- ids and names -------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["get", "log", "verify", "delete", "export"])
def test_unknown_session_is_not_found(
    cli: Cli, home: Path, populated: str, unchanged: Unchanged, command: str
) -> None:
    check = unchanged(home)
    extra = ["-o", str(home.parent / "out.agx")] if command == "export" else []
    run = cli.fast(command, UNKNOWN_UID, *extra).fails(EXIT_NOT_FOUND)
    assert UNKNOWN_UID in run.err
    as_json = cli.fast(command, UNKNOWN_UID, *extra, "--json").fails(EXIT_NOT_FOUND)
    assert as_json.json()["error"] == "not_found"
    check()
    assert not (home.parent / "out.agx").exists()


@pytest.mark.parametrize("bad", MALFORMED_IDS)
@pytest.mark.parametrize("command", ["get", "log", "delete", "export", "verify"])
def test_malformed_session_ids_are_refused_before_touching_files(
    cli: Cli, home: Path, populated: str, unchanged: Unchanged, command: str, bad: str
) -> None:
    check = unchanged(home)
    out = home.parent / "out.agx"
    extra = ["-o", str(out)] if command == "export" else []
    cli.fast(command, bad, *extra).fails(EXIT_USAGE)
    check()
    assert not out.exists()


def test_a_path_like_id_creates_nothing_next_to_the_working_directory(cli: Cli) -> None:
    around = sorted(cli.cwd.parent.rglob("*"))
    cli.fast("delete", "../etc").fails(EXIT_USAGE)
    cli.fast("get", "../../etc/passwd").fails(EXIT_USAGE)
    assert sorted(cli.cwd.parent.rglob("*")) == around


def test_malformed_id_in_json_mode_reports_the_error_object(cli: Cli) -> None:
    run = cli.fast("get", "../etc", "--json").fails(EXIT_USAGE)
    assert run.json()["error"] == "invalid_argument"


@pytest.mark.parametrize("project", BAD_PROJECTS)
def test_bad_project_names_are_refused(
    cli: Cli, home: Path, populated: str, unchanged: Unchanged, project: str, go_fixture: Path
) -> None:
    check = unchanged(home)
    cli.fast("create", "--project", project).fails(EXIT_USAGE)
    cli.fast("list", "--project", project).fails(EXIT_USAGE)
    cli.fast("import", str(go_fixture), "--project", project).fails(EXIT_USAGE)
    check()


@pytest.mark.parametrize("label", ["novalue", "=v", "k=v\nx"])
def test_bad_labels_are_refused(cli: Cli, home: Path, populated: str, label: str) -> None:
    before = listed(cli)
    cli.fast("create", "--label", label).fails(EXIT_USAGE)
    cli.fast("create", "--annotation", label).fails(EXIT_USAGE)
    assert listed(cli) == before


@pytest.mark.parametrize(
    "args",
    [
        ["list", "--page-size", "-1"],
        ["log", UNKNOWN_UID, "--from", "0"],
        ["verify"],
        ["verify", UNKNOWN_UID, "--all"],
        ["nosuchcommand"],
        ["create", "--bogus"],
    ],
    ids=lambda a: " ".join(a),
)
def test_usage_errors_exit_2_with_one_line(cli: Cli, args: list[str]) -> None:
    cli.fast(*args).fails(EXIT_USAGE)


@pytest.mark.parametrize("wait", ["inf", "1e300", "nan", "-inf"])
@pytest.mark.parametrize("command", ["exec", "resume", "cancel"])
def test_a_wait_no_lock_can_take_is_a_usage_error(
    cli: Cli, home: Path, populated: str, unchanged: Unchanged, command: str, wait: str
) -> None:
    """An infinite or astronomically long ``--wait`` is refused (exit 2), not a traceback."""
    check = unchanged(home)
    extra = ["--input", "hi"] if command == "exec" else []
    run = cli.fast(command, populated, *extra, "--wait", wait)
    if wait == "-inf":  # typer's own min=0 check answers first
        run.fails(EXIT_USAGE)
    else:
        assert "wait must be a finite number of seconds" in run.fails(EXIT_USAGE).err
    check()
    if command == "exec":  # a new session is not created either
        cli.fast("exec", "--input", "hi", "--wait", wait).fails(EXIT_USAGE)
        check()


# --- damaged journals ----------------------------------------------------------------------


def flip_inside(path: Path, needle: bytes) -> None:
    """Flip one bit in the middle of ``needle`` inside ``path``."""
    data = bytearray(path.read_bytes())
    at = data.find(needle)
    assert at >= 0, f"{needle!r} not in {path}"
    data[at + len(needle) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_flipped_byte_in_an_acknowledged_frame_fails_verify_naming_the_seq(
    cli: Cli, home: Path, populated: str, unchanged: Unchanged
) -> None:
    uid = populated
    (segment,) = [s for s in segments(home, uid) if b"message number 2" in s.read_bytes()]
    flip_inside(segment, b"message number 2")
    check = unchanged(home)
    run = cli.fast("verify", uid)
    assert run.code in (EXIT_CORRUPT, EXIT_CHAIN), run.err
    run.fails(run.code)
    assert "seq 3" in run.err
    report = cli.fast("verify", uid, "--json")
    assert report.code == run.code and report.json()["first_bad_seq"] == 3
    assert cli.fast("verify", "--all").code == run.code
    cli.fast("verify", str(home / "sessions" / uid)).fails(run.code)
    check()


def test_damage_in_the_last_acknowledged_group_is_corruption_not_a_torn_tail(
    cli: Cli, home: Path, unchanged: Unchanged
) -> None:
    """Damage in the last group looks like a torn write to the bytes alone; the session's
    acknowledged head says otherwise, so verify names the damage (exit 8), as log does."""
    uid = cli.import_fixture()  # one commit of four records: a single group
    (segment,) = segments(home, uid)
    flip_inside(segment, b"hello")
    check = unchanged(home)
    run = cli.fast("verify", uid)
    run.fails(EXIT_CORRUPT)
    assert "acknowledged" in run.err and "frame CRC mismatch" in run.err, run.err
    cli.fast("log", uid).fails(EXIT_CORRUPT)
    check()


def test_a_truncated_sealed_segment_fails_verify(
    cli: Cli, home: Path, unchanged: Unchanged
) -> None:
    uid = seed(home, commits=60, options=StoreOptions(segment_max_bytes=4096))
    sealed = segments(home, uid)[:-1]
    assert sealed, "the store did not rotate segments"
    victim = sealed[len(sealed) // 2]
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    check = unchanged(home)
    run = cli.fast("verify", uid)
    assert run.code in (EXIT_CORRUPT, EXIT_CHAIN), run.err
    run.fails(run.code)
    check()


# --- bad files to import -------------------------------------------------------------------


@pytest.fixture
def exported(cli: Cli, populated: str, tmp_path: Path) -> Callable[[bool], Path]:
    """``exported(compress)``: an export of the imported Go fixture session."""

    def make(compress: bool) -> Path:
        uid = cli.import_fixture()
        out = tmp_path / f"export-{compress}.agx"
        cli.fast("export", uid, "-o", str(out), *([] if compress else ["--no-compress"])).ok()
        return out

    return make


def refuse_import(
    cli: Cli, home: Path, unchanged: Unchanged, path: Path, codes: tuple[int, ...]
) -> None:
    """Import of ``path`` fails with one of ``codes``, creating nothing."""
    before = listed(cli)
    check = unchanged(home)
    run = cli.fast("import", str(path))
    assert run.code in codes, f"import exited {run.code}: {run.out}{run.err}"
    run.fails(run.code)
    check()
    assert listed(cli) == before


@pytest.mark.parametrize("compress", [True, False], ids=["zstd", "plain"])
def test_a_truncated_export_is_refused(
    cli: Cli, home: Path, unchanged: Unchanged, exported: Callable[[bool], Path], compress: bool
) -> None:
    path = exported(compress)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])
    refuse_import(cli, home, unchanged, path, (EXIT_FORMAT, EXIT_CHAIN))
    assert cli.fast("verify", str(path)).code in (EXIT_FORMAT, EXIT_CHAIN)


@pytest.mark.parametrize(
    ("old", "new"),
    [(b'"text":"hello"', b'"text":"jello"'), (b'"COMPLETED"', b'"COMPLETEX"')],
    ids=["first-record", "last-record"],
)
def test_a_tampered_export_is_refused(
    cli: Cli,
    home: Path,
    unchanged: Unchanged,
    exported: Callable[[bool], Path],
    old: bytes,
    new: bytes,
) -> None:
    path = exported(False)
    data = path.read_bytes()
    assert data.count(old) == 1
    path.write_bytes(data.replace(old, new))
    refuse_import(cli, home, unchanged, path, (EXIT_CHAIN, EXIT_FORMAT))
    assert cli.fast("verify", str(path)).code in (EXIT_CHAIN, EXIT_FORMAT)


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe\xfd\x00 not utf-8",
        b"just some words\n",
        b"{oops",
        b"[1, 2",
        b"",
        b"\x28\xb5\x2f\xfd garbage after the zstd magic",
    ],
    ids=["non-utf8", "not-json", "broken-object", "broken-array", "empty", "bad-zstd"],
)
def test_non_journal_input_to_import_is_a_format_error(
    cli: Cli, home: Path, populated: str, unchanged: Unchanged, tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "input.bin"
    path.write_bytes(content)
    refuse_import(cli, home, unchanged, path, (EXIT_FORMAT,))


# --- a busy session ------------------------------------------------------------------------


def test_a_second_writer_is_refused_and_told_who_holds_the_session(
    cli: Cli, home: Path, populated: str, unchanged: Unchanged
) -> None:
    uid = populated
    store = FileStore(home)
    try:
        with store.writer(uid):
            check = unchanged(home)
            run = cli.fast("delete", uid).fails(EXIT_BUSY)
            assert f"pid {os.getpid()}" in run.err
            check()
    finally:
        store.close()
    assert cli.fast("delete", uid, "--json").ok().json()["deleted"] is True

"""Export files whose header is malformed: ``verify FILE`` and ``import`` agree (exit 10, one
line), and the home is byte-identical after the refused import."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from clirun import Cli

Unchanged = Callable[[Path], Callable[[], None]]
EXIT_FORMAT = 10
Edit = Callable[[dict[str, Any]], None]


def _set_session(key: str, value: Any) -> Edit:
    return lambda header: header["session"].__setitem__(key, value)


def _drop(key: str) -> Edit:
    return lambda header: header.pop(key)


def _set(key: str, value: Any) -> Edit:
    return lambda header: header.__setitem__(key, value)


CASES: dict[str, tuple[Edit, str]] = {
    "labels-string": (_set_session("labels", "team=ml"), "session.labels"),
    "labels-list": (_set_session("labels", ["team", "ml"]), "session.labels"),
    "annotations-string": (_set_session("annotations", "x"), "session.annotations"),
    "annotation-number": (_set_session("annotations", {"n": 5}), "session.annotations"),
    "session-string": (_set("session", "sess-x"), "session is not an object"),
    "name-number": (_set_session("name", 7), "session.name"),
    "bad-project": (_set_session("project", "a/b"), "session.project"),
    "fork-seq-text": (_set_session("fork_seq", "3"), "session.fork_seq"),
    "no-last-seq": (_drop("last_seq"), "has no last_seq"),
    "no-records": (_drop("records"), "has no records"),
    "no-last-hash": (_drop("last_hash"), "has no last_hash"),
    "last-seq-text": (_set("last_seq", "4"), "last_seq is not a count"),
    "records-negative": (_set("records", -1), "records is not a count"),
    "last-hash-number": (_set("last_hash", 5), "last_hash is not a string"),
}


@pytest.fixture
def plain_export(cli: Cli, tmp_path: Path) -> Path:
    """An uncompressed export of the imported Go fixture (4 records)."""
    uid = cli.import_fixture()
    out = tmp_path / "good.agx"
    cli.fast("export", uid, "-o", str(out), "--no-compress").ok()
    return out


def _rewrite(path: Path, edit: Edit, out: Path) -> Path:
    """``path`` with its header (and, for a head field, its end marker alike) edited."""
    lines = path.read_bytes().split(b"\n")
    header = json.loads(lines[0])
    edit(header)
    end = json.loads(lines[-2])
    for key in ("records", "last_seq", "last_hash"):  # the end marker agrees with the header
        if key in header:
            end["end"][key] = header[key]
        else:
            end["end"].pop(key)
    lines[0], lines[-2] = json.dumps(header).encode(), json.dumps(end).encode()
    out.write_bytes(b"\n".join(lines))
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_verify_and_import_refuse_a_malformed_header_alike(
    cli: Cli, home: Path, plain_export: Path, unchanged: Unchanged, tmp_path: Path, case: str
) -> None:
    edit, says = CASES[case]
    bad = _rewrite(plain_export, edit, tmp_path / f"{case}.agx")
    listed = cli.fast("list", "--json").ok().json()["sessions"]
    check = unchanged(home)
    verify = cli.fast("verify", str(bad)).fails(EXIT_FORMAT)
    assert says in verify.err, verify.err
    imported = cli.fast("import", str(bad)).fails(EXIT_FORMAT)
    assert says in imported.err, imported.err
    check()
    assert cli.fast("list", "--json").ok().json()["sessions"] == listed


def test_an_unedited_rewrite_still_verifies_and_imports(
    cli: Cli, plain_export: Path, tmp_path: Path
) -> None:
    """The rewrite itself keeps a file valid: the refusals above are the edits' doing."""
    same = _rewrite(plain_export, lambda header: None, tmp_path / "same.agx")
    cli.fast("verify", str(same)).ok()
    got = cli.fast("import", str(same), "--json").ok().json()
    assert got["last_seq"] == 4

"""No human-readable output of list, get or log carries a raw control character.

Names, labels, annotations and message text arrive from the library, from ``import`` of
LogRecord JSON lines and from a Go record array; whatever they hold, the table, the
details and the log show escapes (``\\x1b``) instead, while ``--json`` stays exact.
"""

from __future__ import annotations

import json
import tempfile
import time
import unicodedata
from pathlib import Path
from typing import Any

from clirun import FIXTURE, Cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsessions.journal.format import canonical
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.interchange import go_event_to_wire

HOSTILE = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))]
HOSTILE += ["\u202e", "\u202d", "\u2066", "\u2069", "\u200b", "\u2028", "\x1b[2J", "\x1b]0;t\x07"]
PIECE = st.one_of(st.sampled_from(HOSTILE), st.characters(codec="utf-8"))
TEXT = st.lists(PIECE, min_size=1, max_size=5).map("".join)  # short: no cell wraps at 200
GET_KEYS = {
    "uid", "project", "name", "harness", "model", "labels", "annotations", "last_seq",
    "last_hash", "compute", "memory", "usage", "exec", "fence", "created", "updated",
}  # fmt: skip


def raw_controls(out: str) -> list[str]:
    """Control (Cc: C0, DEL, C1) and format (Cf: bidi overrides...) characters, bar newlines."""
    return [ch for ch in out if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf")]


def say(text: str) -> dict[str, Any]:
    return {"kind": "EVENT_INPUT", "message": {"role": "user", "parts": [{"text": {"text": text}}]}}


def seed(home: Path, text: str) -> str:
    """A session whose name, label, annotation and one INPUT all hold ``text``."""
    store = FileStore(home)
    try:
        meta = SessionMeta(
            uid=new_uid(), name=text, labels={"k": text}, annotations={"note": text},
            create_time_ns=time.time_ns(),
        )  # fmt: skip
        uid = store.create(meta).uid
        with store.writer(uid) as writer:
            writer.append([say(text)])
    finally:
        store.close()
    return uid


def go_journal(path: Path, text: str) -> None:
    """The shipped Go fixture with its first input replaced by ``text``, re-hashed."""
    records = json.loads(FIXTURE.read_text(encoding="utf-8"))
    records[0]["Event"]["Message"]["Parts"][0]["Text"]["Text"] = text
    prev = ""
    for record in records:
        wire = go_event_to_wire(record["Event"])
        payload = canonical.envelope(canonical.canonical_json(wire), prev, record["Seq"])
        record["PrevHash"], record["Hash"] = prev, canonical.content_hash(payload)
        prev = record["Hash"]
    path.write_text(json.dumps(records), encoding="utf-8")


def check_views(cli: Cli, uids: list[str]) -> None:
    listed = cli.fast("list").ok().out
    assert raw_controls(listed) == []
    assert listed.count("\n") == 1 + len(uids)  # a raw newline would add a line
    for uid in uids:
        got = cli.fast("get", uid).ok().out
        assert raw_controls(got) == []
        assert {line.split(" ")[0] for line in got.split("\n") if line} <= GET_KEYS
        records = cli.fast("log", uid, "--json").ok().out.count("\n")  # one JSON per line
        logged = cli.fast("log", uid).ok().out
        assert raw_controls(logged) == []
        assert logged.count("\n") == 1 + records


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT)
def test_no_human_output_has_a_raw_control_character(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cli = Cli(root / "home", root)
        uid = seed(cli.home, text)
        exported = cli.fast("log", uid, "--json").ok().out
        (root / "lines.jsonl").write_text(exported, encoding="utf-8")
        from_lines = cli.fast("import", str(root / "lines.jsonl"), "--name", text, "--json")
        go_journal(root / "go.json", text)
        from_go = cli.fast("import", str(root / "go.json"), "--name", text, "--json")
        uids = [uid, from_lines.ok().json()["uid"], from_go.ok().json()["uid"]]
        check_views(cli, uids)
        # --json keeps every character exactly
        assert cli.fast("get", uid, "--json").ok().json()["name"] == text


def test_a_screen_clearing_name_is_shown_escaped(cli: Cli) -> None:
    uid = seed(cli.home, "a\x1b[2Jb\u202ec")
    assert "a\\x1b[2Jb\\u202ec" in cli.fast("get", uid).ok().out
    assert "a\\x1b[2Jb\\u202ec" in cli.fast("list").ok().out
    assert "user: a\\x1b[2Jb\\u202ec" in cli.fast("log", uid).ok().out


def test_exec_escapes_the_answer_on_a_terminal_and_keeps_it_exact_in_a_pipe(cli: Cli) -> None:
    """Main wrote the model's answer to a terminal raw: an echoed ESC sequence (or one a
    remote model sends) reached the terminal. A pipe still gets the answer byte for byte."""
    import os
    import subprocess
    import sys

    from clirun import clean_env

    hostile = "a\x1b]0;pwn\x07b\x1b[2J\u009b31m\u202ec\rd\te\nf"
    argv = [sys.executable, "-m", "agentsessions", "--home", str(cli.home), "exec"]
    argv += ["--input", hostile]
    main, sub = os.openpty()
    try:
        proc = subprocess.run(
            argv, stdout=sub, stderr=subprocess.PIPE, env=clean_env(), timeout=120
        )
        os.close(sub)
        sub = -1
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the writer side is closed and drained
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(main)
        if sub >= 0:
            os.close(sub)
    assert proc.returncode == 0, proc.stderr
    shown = b"".join(chunks).decode().replace("\r\n", "\n")  # the tty maps \n to \r\n
    assert shown.startswith("echo:a\\x1b]0;pwn\\x07b\\x1b[2J\\x9b31m\\u202ec\\rd\te\nf")
    assert raw_controls(shown.replace("\t", "")) == []
    piped = subprocess.run(argv, capture_output=True, env=clean_env(), timeout=120)
    assert piped.returncode == 0 and piped.stdout == f"echo:{hostile}\n".encode()

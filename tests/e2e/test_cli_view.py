"""``agentsessions view`` as a user runs it (issue 23, section 3): one self-contained page per
session, an index with ``--all``, escaped content, damaged sessions shown, usage errors."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import sys
from pathlib import Path

import pytest
from clirun import Cli
from needs import need
from viewhtml import HOSTILE, HOSTILE_NAME, blocks, meta, rows

WORKLOAD = """\
[session]
components = ["chat"]
tool_components = ["notes"]

[tools.notes]
mediation = "mediated"
executor = "notes"
parameters = { type = "object", properties = { op = { type = "string" } } }

[tools.append_line]
mediation = "approval"
executor = "append_line"
parameters = { type = "object", properties = { line = { type = "string" } } }
config = { path = "EFFECTS" }
"""


def rich_session(cli: Cli, tmp_path: Path) -> tuple[str, str]:
    """A chat session whose input and name are hostile, with a tool store, an approval by
    alice and a fork child at seq 3; (uid, child uid)."""
    tools = tmp_path / "tools.toml"
    tools.write_text(WORKLOAD.replace("EFFECTS", str(tmp_path / "effects.txt")))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "notes", "arguments": {"op": "add", "text": HOSTILE}}]},
        {"tool_calls": [{"name": "append_line", "arguments": {"line": "milk"}}]},
        "Done " + HOSTILE,
    ]))  # fmt: skip
    run = cli.fast("exec", "--harness", "chat", "--model", f"scripted:file={script}",
                   "--tools", str(tools), "--name", HOSTILE_NAME, "--input", HOSTILE)  # fmt: skip
    assert run.code == 20, run.err  # parked on the approval
    uid = cli.fast("list", "--json").ok().json()["sessions"][0]["uid"]
    cli.fast("approve", uid, "--actor", "alice", "--reason", "fine").ok()
    child = cli.fast("fork", uid, "--at", "3", "--name", "child", "--json").ok().json()[0]["uid"]
    return uid, child


def test_a_page_shows_metadata_badge_timeline_tree_and_tool_store(cli: Cli, tmp_path: Path) -> None:
    uid, child = rich_session(cli, tmp_path)
    summary = cli.fast("view", uid, "--json").ok().json()
    page = cli.cwd / f"{uid}.html"  # the default name, in the working directory
    assert summary["path"] == f"{uid}.html" and summary["bytes"] == page.stat().st_size
    log = cli.fast("log", uid, "--json").ok().out.encode()
    assert summary["journal_text_bytes"] == len(log) and summary["verified"] is True
    got = meta(page)
    assert got["session"]["uid"] == uid and got["session"]["name"] == HOSTILE_NAME
    assert got["verify"]["ok"] is True and got["verify"]["last_seq"] == summary["records"]
    [turn] = [g for g in got["groups"] if g["x"]]
    assert (turn["a"], turn["b"], turn["s"]) == (1, summary["records"], "COMPLETED")
    assert turn["p"] == HOSTILE and turn["f"] == ["approval"] and turn["k"] == 2
    assert [(n["uid"], n["parent"], n["fork_seq"]) for n in got["tree"]] == [
        (uid, "", 0),
        (child, uid, 3),
    ]
    [store] = got["stores"]
    assert store["name"] == "notes" and store["entries"][0]["data"]["text"] == HOSTILE
    records = rows(page)
    assert [r[0] for r in records] == list(range(1, summary["records"] + 1))
    wire = [json.loads(line) for line in log.splitlines()]
    assert [(r[1], r[2]) for r in records] == [(w["content_hash"], w["event"]) for w in wire]
    # the records' share of the page is below their text (the 2x bound; bench/view.py)
    chunk = rb'<script type="application/json" id="c\d+".*?</script>'
    chunks = re.findall(chunk, page.read_bytes())
    assert 0 < sum(len(c) for c in chunks) < len(log)
    decided = [r[2] for r in records if r[2]["kind"] == "EVENT_APPROVAL_RESULT"]
    assert decided[0]["actor"] == {"principal": "alice"}


def test_a_compaction_and_a_suspension_are_marked_in_the_timeline(cli: Cli) -> None:
    uid = cli.fast("create", "--harness", "chat", "--model", "echo").ok().out.strip()
    for i in range(3):
        cli.fast("exec", uid, "--input", f"turn {i}").ok()
    cli.fast("compact", uid, "--keep-turns", "1").ok()
    cli.fast("suspend", uid).ok()
    cli.fast("resume", uid).ok()
    cli.fast("view", uid, "-o", "page.html").ok()
    groups = meta(cli.cwd / "page.html")["groups"]
    assert [g["p"] for g in groups[:3]] == ["turn 0", "turn 1", "turn 2"]
    assert groups[3]["f"] == ["compaction"] and groups[3]["s"] == "COMPLETED"
    assert [g.get("f") for g in groups[4:]] == [["suspend"], ["resume"]]


def test_hostile_content_stays_inside_its_json(cli: Cli, tmp_path: Path) -> None:
    uid, _ = rich_session(cli, tmp_path)
    cli.fast("view", uid, "-o", "page.html").ok()
    raw = (cli.cwd / "page.html").read_bytes()
    opened = len(re.findall(rb"<script", raw, flags=re.I))
    closed = len(re.findall(rb"</script", raw, flags=re.I))
    assert opened == closed == len(blocks(cli.cwd / "page.html")) + 1  # the data and the script
    for needle in (b"<img", b"<!--", b"<b>", b"onerror=alert(1)>", "\u2028".encode()):
        assert needle not in raw, needle
    assert b"http://" not in raw and b"https://" not in raw  # nothing to fetch


def test_the_policy_allows_exactly_the_pages_own_style_and_script(cli: Cli) -> None:
    uid = cli.create()
    cli.fast("view", uid, "-o", "page.html").ok()
    raw = (cli.cwd / "page.html").read_text(encoding="utf-8")
    policy = re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', raw)
    rules = dict(rule.strip().split(" ", 1) for rule in policy[0].split(";"))
    assert rules["default-src"] == "'none'"  # no fetch, no frame, no font: nothing leaves

    def sha(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    [style] = re.findall(r"<style>(.*?)</style>", raw, flags=re.S)
    [script] = re.findall(r"<script>(.*?)</script>", raw, flags=re.S)
    assert rules["style-src"] == sha(style) and rules["script-src"] == sha(script)


def test_view_all_writes_an_index_and_one_page_per_session(cli: Cli, tmp_path: Path) -> None:
    uid, child = rich_session(cli, tmp_path)
    other = cli.import_fixture("--name", "from-go")
    out = cli.fast("view", "--all", "-o", "site", "--json").ok().json()
    site = cli.cwd / "site"
    text = cli.fast("view", "--all", "-o", "again").ok().out
    assert text.endswith("index of 3 sessions\n")
    assert out["index"] == str(Path("site") / "index.html")
    assert sorted(p["uid"] for p in out["pages"]) == sorted([uid, child, other])
    index = meta(site / "index.html")
    assert index["page"] == "index" and index["project"] == "default"
    for row in index["sessions"]:
        assert (site / row["page"]).is_file() and row["page"] == f"{row['uid']}.html"
        assert meta(site / row["page"])["index"] == "index.html"
    assert rows(site / f"{other}.html")[0][2]["kind"] == "EVENT_INPUT"


def _flip(home: Path, uid: str, needle: bytes) -> None:
    [segment] = sorted((home / "sessions" / uid).rglob("*.seg"))
    data = bytearray(segment.read_bytes())
    at = data.index(needle)
    data[at] ^= 0x01
    segment.write_bytes(bytes(data))


def test_a_damaged_session_still_gets_its_page_saying_where(cli: Cli, home: Path) -> None:
    uid = cli.fast("exec", "--input", "first turn", "--json").ok().json()["uid"]
    cli.fast("exec", uid, "--input", "second turn").ok()
    _flip(home, uid, b"second turn")
    run = cli.fast("view", uid, "--json").ok()
    assert "does not verify at seq 6" in run.err and "(the page shows it)" in run.err
    got = meta(cli.cwd / f"{uid}.html")
    assert got["verify"]["ok"] is False and got["verify"]["first_bad_seq"] == 6
    assert run.json()["first_bad_seq"] == 6


def test_a_sealed_session_without_its_key_shows_what_can_be_read(cli: Cli, tmp_path: Path) -> None:
    need("cryptography", "crypto")
    key = tmp_path / "master.key"
    cli.fast("keys", "new", str(key)).ok()
    uid = cli.fast("--key-file", str(key), "exec", "--input", "secret", "--json").ok().json()["uid"]
    run = cli.fast("view", uid, "--json").ok()
    assert "encrypted and no master key was given" in run.err
    got = meta(cli.cwd / f"{uid}.html")
    assert got["verify"]["ok"] is True and got["records"] == 0 and got["read_error"]
    assert b"secret" not in (cli.cwd / f"{uid}.html").read_bytes()
    keyed = cli.fast("--key-file", str(key), "view", uid, "-o", "keyed.html").ok()
    assert keyed.err == "" and rows(cli.cwd / "keyed.html")[1][2]["message"]["role"] == "user"


def test_view_usage_errors_are_one_line(cli: Cli) -> None:
    uid = cli.create()
    cli.fast("view").fails(2)
    cli.fast("view", uid, "--all").fails(2)
    cli.fast("view", "not-a-uid").fails(2)
    cli.fast("view", "sess-0123456789abcdef01234567").fails(3)
    cli.fast("view", "--all", "--project", "a/b").fails(2)
    cli.fast("view", uid, "--project", "default").fails(2)
    assert not list(cli.cwd.iterdir())  # nothing written


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script as the browser")
def test_open_hands_the_page_to_the_browser(cli: Cli, tmp_path: Path) -> None:
    uid = cli.create()
    seen = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" > {seen}\n')
    browser.chmod(0o755)
    cli.run("view", uid, "-o", "p.html", "--open", env={"BROWSER": str(browser)}).ok()
    assert seen.read_text().strip() == (cli.cwd / "p.html").as_uri()
    assert os.access(cli.cwd / "p.html", os.R_OK)

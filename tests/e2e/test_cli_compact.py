"""``agentsessions compact`` through the real command line (issue 9 item 5).

Four chat turns (echo model), ``compact --keep-turns 2``: the summary and its marker are two
new OUTPUTs, ``log`` still shows every original entry, ``replay --rerun`` calls no model,
``verify`` passes; nothing to compact exits 17 with one error line and writes nothing.
"""

from __future__ import annotations

from clirun import Cli
from conftest import snapshot


def _kinds(cli: Cli, uid: str) -> list[str]:
    return [line.split()[1] for line in cli.fast("log", uid).ok().out.splitlines()[1:]]


def test_compact_keeps_every_entry_and_replays_without_model_calls(cli: Cli) -> None:
    uid = cli.fast("create", "--harness", "chat", "--model", "echo").ok().out.strip()
    for i in range(4):
        cli.fast("exec", uid, "--input", f"turn {i}").ok()
    before = cli.fast("log", uid, "--json").ok().json_lines()

    run = cli.run("compact", uid, "--keep-turns", "2").ok()
    assert run.out.startswith(f"session {uid} compacted: seq 1-10 summarised by execution ")
    assert "tokens saved" in run.out

    after = cli.fast("log", uid, "--json").ok().json_lines()
    assert after[: len(before)] == before  # the original entries stay
    assert _kinds(cli, uid)[len(before) :] == [
        "EXECUTION_START", "MODEL_CALL", "OUTPUT", "OUTPUT", "END"
    ]  # fmt: skip
    assert '"compaction"' in cli.fast("log", uid).ok().out

    replay = cli.fast("replay", uid, "--rerun", "--json").ok().json()
    assert replay["identical"] is True and replay["model_calls"] == 0
    cli.fast("verify", uid).ok()

    again = cli.fast("compact", uid, "--json").fails(17)
    assert "nothing to compact" in again.err  # nothing new since the compaction


def test_compact_json_names_the_range(cli: Cli) -> None:
    uid = cli.fast("create", "--harness", "chat", "--model", "echo").ok().out.strip()
    for i in range(3):
        cli.fast("exec", uid, "--input", f"turn {i}").ok()
    doc = cli.fast("compact", uid, "--keep-turns", "1", "--json").ok().json()
    assert doc["compaction"]["from_seq"] == 1 and doc["compaction"]["to_seq"] == 10
    assert doc["uid"] == uid


def test_compact_of_an_empty_session_exits_17_and_writes_nothing(cli: Cli) -> None:
    uid = cli.fast("create", "--harness", "chat", "--model", "echo").ok().out.strip()
    before = snapshot(cli.home)
    run = cli.fast("compact", uid).fails(17)
    assert "has nothing to compact: it has no turns" in run.err
    assert snapshot(cli.home) == before


def test_compact_bad_usage(cli: Cli) -> None:
    cli.fast("compact", "not-a-session").fails(2)
    uid = cli.fast("create", "--harness", "chat", "--model", "echo").ok().out.strip()
    cli.fast("compact", uid, "--keep-turns", "-1").fails(2)

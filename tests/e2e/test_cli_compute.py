"""Warm compute as a user sees it: ``compute list/stop``, ``get``'s memory line, and
``exec --fresh-start`` as the way forward once a memory harness's memory is gone.

Every warm host a test starts is ended by ``shutdown_all`` in the fixture.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from clirun import Cli

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="warm hosts need Linux"
)

ENV = {"AGENTSESSIONS_WARM_IDLE_SECONDS": "120"}


@pytest.fixture
def warm(cli: Cli) -> Iterator[Cli]:
    from agentsessions.runtimes.warm_launch import shutdown_all

    try:
        yield cli
    finally:
        shutdown_all(cli.home)


def counter(cli: Cli, *texts: str) -> str:
    """A new counter session that has counted ``texts``; its uid."""
    first = cli.fast("exec", "--harness", "counter", "--input", texts[0], env=ENV).ok()
    uid = first.err.split()[1]
    for text in texts[1:]:
        cli.fast("exec", uid, "--input", text, env=ENV).ok()
    return uid


def memory(cli: Cli, uid: str) -> dict[str, Any]:
    got: dict[str, Any] = cli.fast("get", uid, "--json").ok().json()["memory"]
    return got


def test_list_get_stop_then_fresh_start_and_replay_still_reproduces(warm: Cli) -> None:
    cli = warm
    uid = counter(cli, "a", "b")
    hosts = cli.fast("compute", "list", "--json").ok().json()["compute"]
    assert [(h["session"], h["harness"], h["kind"]) for h in hosts] == [(uid, "counter", "live")]
    pid = hosts[0]["pid"]
    table = cli.fast("compute", "list").ok().out
    assert f"{uid}  counter  {pid}  live host" in table and "idle until" in table
    shown = cli.fast("get", uid).ok().out
    assert f"memory       warm host pid {pid}, idle timeout at 20" in shown
    assert memory(cli, uid)["where"] == "live" and memory(cli, uid)["pid"] == pid

    assert cli.fast("compute", "stop", uid).ok().out == f"stopped live host pid {pid} of {uid}\n"
    again = cli.fast("compute", "stop", uid).ok().out
    assert again == f"session {uid} has no warm compute running (nothing to stop)\n"
    assert memory(cli, uid)["where"] == "gone"
    assert "memory       gone (its warm host ended" in cli.fast("get", uid).ok().out

    lost = cli.fast("exec", uid, "--input", "c", env=ENV).fails(12)
    assert "hint: start the harness again with empty memory" in lost.err
    assert f"agentsessions exec {uid} --fresh-start --input TEXT" in lost.err
    fresh = cli.fast("exec", uid, "--fresh-start", "--input", "c", env=ENV).ok()
    assert fresh.out == "count:1\n"
    assert cli.fast("exec", uid, "--input", "d", env=ENV).ok().out == "count:2\n"

    records = cli.fast("log", uid, "--json").ok().json_lines()
    markers = [r for r in records if r["event"]["kind"] == "EVENT_LIFECYCLE"]
    assert [(m["seq"], m["event"]["lifecycle"]) for m in markers] == [
        (
            "9",
            {
                "kind": "LIFECYCLE_RESUME",
                "detail": "fresh start: harness memory lost; the harness restarts empty at seq 9",
            },
        )
    ]
    replayed = cli.fast("replay", uid, "--rerun", "--json").ok().json()
    assert replayed["identical"] and replayed["replayed"] == 4 and replayed["model_calls"] == 0
    assert replayed["outputs"] == ["count:1", "count:2", "count:1", "count:2"]
    assert cli.fast("verify", uid).code == 0


def test_a_lost_snapshot_of_a_suspended_session_has_the_same_way_forward(warm: Cli) -> None:
    cli = warm
    uid = counter(cli, "a")
    cli.fast("suspend", uid, env=ENV).ok()
    frozen = cli.fast("compute", "list", uid, "--json").ok().json()["compute"]
    assert [h["kind"] for h in frozen] == ["snapshot"]
    assert memory(cli, uid)["where"] == "snapshot"
    assert frozen[0]["snapshot"] in cli.fast("get", uid).ok().out
    stopped = cli.fast("compute", "stop", uid, "--json").ok().json()["stopped"]
    assert [h["pid"] for h in stopped] == [frozen[0]["pid"]]
    lost = cli.fast("exec", uid, "--input", "b", env=ENV)
    assert lost.code == 12  # the wake failed before any frame: no "resuming" narration
    error, hint = lost.err.splitlines()[-2:]
    assert error.startswith("agentsessions: error: warm snapshot warm:")
    assert hint.endswith(f"agentsessions exec {uid} --fresh-start --input TEXT")
    assert cli.fast("exec", uid, "--fresh-start", "--input", "b", env=ENV).ok().out == "count:1\n"
    assert cli.fast("get", uid, "--json").ok().json()["compute_state"] == "COMPUTE_LIVE"
    assert cli.fast("replay", uid, "--rerun", "--json").ok().json()["identical"]


def test_fresh_start_never_throws_away_memory_that_is_still_there(warm: Cli) -> None:
    cli = warm
    uid = counter(cli, "a")
    refused = cli.fast("exec", uid, "--fresh-start", "--input", "b", env=ENV).fails(2)
    assert "still holds its harness memory" in refused.err
    assert f"agentsessions compute stop {uid}" in refused.err
    cli.fast("suspend", uid, env=ENV).ok()  # a snapshot that still restores is memory too
    restored = cli.fast("exec", uid, "--fresh-start", "--input", "b", env=ENV)
    assert restored.code == 2  # after the RESUME record line: the memory is live again
    assert "just restored from its snapshot" in restored.err.splitlines()[-2]
    assert cli.fast("exec", uid, "--input", "b", env=ENV).ok().out == "count:2\n"


def test_fresh_start_is_refused_where_it_means_nothing(cli: Cli) -> None:
    new = cli.fast("exec", "--fresh-start", "--input", "a").fails(2)
    assert "existing session" in new.err
    uid = cli.fast("exec", "--input", "a").ok().err.split()[1]
    before = cli.fast("log", uid, "--json").ok().out
    stateless = cli.fast("exec", uid, "--fresh-start", "--input", "b").fails(2)
    assert "keeps no memory" in stateless.err
    assert memory(cli, uid) == {
        "where": "none",
        "pid": None,
        "idle_until": None,
        "text": "none (stateless harness: the journal is its state)",
        "hint": "",
    }
    assert cli.fast("log", uid, "--json").ok().out == before  # nothing was written


def test_compute_commands_check_their_arguments(cli: Cli) -> None:
    unknown = "sess-0123456789abcdef01234567"
    cli.fast("compute", "stop", unknown).fails(3)
    cli.fast("compute", "list", unknown).fails(3)
    cli.fast("compute", "stop").fails(2)
    cli.fast("compute", "stop", unknown, "--all").fails(2)
    cli.fast("compute", "stop", "not-a-uid").fails(2)
    assert cli.fast("compute", "list").ok().out == "no warm compute runs for this home\n"
    assert cli.fast("compute", "list", "--json").ok().json() == {"compute": []}
    assert cli.fast("compute", "stop", "--all", "--json").ok().json() == {"stopped": []}
    for command in ("list", "stop"):
        out = cli.fast("compute", command, "--help").ok().out
        assert "--json" in out and "Example" in out


def test_delete_help_says_the_delete_is_soft(cli: Cli) -> None:
    out = cli.fast("delete", "--help").ok().out
    assert "for good" not in out
    assert "Soft-delete" in out and "read-only" in out


def test_a_damaged_session_can_still_have_its_host_listed_and_stopped(warm: Cli) -> None:
    """Main: `compute stop UID` read the session first, so damaged metadata (exit 8) kept
    its warm host running out of reach of everything but `--all`."""
    cli = warm
    uid = counter(cli, "a")
    (cli.home / "sessions" / uid / "session.json").write_text("{")
    cli.fast("get", uid).fails(8)
    hosts = cli.fast("compute", "list", uid, "--json").ok().json()["compute"]
    assert [h["session"] for h in hosts] == [uid]
    out = cli.fast("compute", "stop", uid).ok().out
    assert out == f"stopped live host pid {hosts[0]['pid']} of {uid}\n"
    assert cli.fast("compute", "list", "--json").ok().json() == {"compute": []}

"""``agentsessions demo``: the README's main job runs offline, end to end, and proves itself."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clirun import Cli

STEPS = (
    "run a 3-turn session",
    "show its records",
    "kill a turn mid-call with SIGKILL, then resume it",
    "replay the session",
    "fork after turn 2 into 2 children, a turn in each",
    "suspend and resume the parent's compute",
    "import the Go reference journal and replay it",
    "verify every chain",
)


def test_demo_runs_the_main_job_in_a_temporary_home(cli: Cli) -> None:
    run = cli.run("demo", home=False).ok()
    for step in STEPS:
        assert f"✓ {step}" in run.out
    assert "0 model calls" in run.out
    assert "exec RUNNING" in run.out and "resume called the model once" in run.out
    last = run.out.strip().splitlines()[-1]
    assert last.startswith("demo ok:") and "temporary home (removed)" in last


def test_demo_in_a_given_home_leaves_sessions_that_verify_and_replay(cli: Cli) -> None:
    summary = cli.fast("demo", "--json").ok().json()
    assert summary["ok"] is True and summary["temporary_home"] is False
    assert [step["step"].split(" (")[0] for step in summary["steps"]] == list(STEPS)
    assert all(step["ok"] for step in summary["steps"])
    assert summary["model_calls_on_replay"] == 0
    for replayed in (summary["replay"], summary["go_replay"]):
        assert replayed["identical"] is True and replayed["model_calls"] == 0
    assert summary["replay"]["executions"] == 4  # three turns and the killed, resumed one
    sessions = cli.fast("list", "--project", "demo", "--json").ok().json()["sessions"]
    expected = {summary["session_uid"], summary["imported_uid"], *summary["children"]}
    assert {s["uid"] for s in sessions} == expected
    assert cli.fast("verify", "--all", "--json").ok().json()["ok"] is True
    rerun = cli.fast("replay", summary["session_uid"], "--rerun", "--json").ok().json()
    assert rerun["model_calls"] == 0 and rerun["identical"] is True

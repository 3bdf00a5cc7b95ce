"""``--model`` with a harness that calls no model, as a user types it: exit 2, one line
naming the harnesses that do, nothing written; locally and over ``--server`` alike."""

from __future__ import annotations

from pathlib import Path

from clirun import Cli
from needs import need


def test_model_with_the_default_echo_harness_is_refused(cli: Cli) -> None:
    run = cli.fast("exec", "--model", "openai:gpt-4o-mini", "--input", "hi").fails(2)
    assert "harness 'echo' calls no model" in run.err and "that call it: chat" in run.err
    assert "hint: agentsessions exec --harness chat --model openai:gpt-4o-mini" in run.err
    assert cli.fast("list", "--json").ok().json()["sessions"] == []
    # exec SESSION --model on a session whose harness calls no model: refused the same way
    uid = cli.fast("exec", "--input", "hi", "--json").ok().json()["uid"]
    before = len(cli.fast("log", uid, "--json").ok().json_lines())
    cli.fast("exec", uid, "--model", "scripted:seed=1", "--input", "x").fails(2)
    assert len(cli.fast("log", uid, "--json").ok().json_lines()) == before
    cli.fast("exec", "--harness", "chat", "--model", "scripted:seed=1", "--input", "hi").ok()


def test_model_with_echo_is_refused_over_server(tmp_path: Path) -> None:
    need("grpc", "grpc")
    from test_serve import remote, served

    (tmp_path / "served").mkdir()
    with served(tmp_path / "served") as daemon:
        run = remote(daemon.address, tmp_path, "exec", "--model", "scripted:seed=1",
                     "--input", "hi").fails(2)  # fmt: skip
        assert "harness 'echo' calls no model" in run.err
        assert remote(daemon.address, tmp_path, "list", "--json").ok().json()["sessions"] == []


def test_a_remote_harness_declares_it_over_the_wire(cli: Cli) -> None:
    """``harness serve echo`` describes itself with uses_session_model false: a turn that
    names a model for it is refused (exit 2) by the host, before the harness is driven."""
    need("grpc", "grpc")
    from test_cli_remote_harness import _address, serve

    address = _address("echo")
    node = serve(cli, "echo", address)
    try:
        cli.fast("harness", "register", "far-echo", "--address", address).ok()
        run = cli.fast("exec", "--harness", "far-echo", "--model", "scripted:seed=1",
                       "--input", "hi").fails(2)  # fmt: skip
        assert "harness 'far-echo' calls no model" in run.err
        cli.fast("exec", "--harness", "far-echo", "--input", "hi").ok()
    finally:
        node.stop()

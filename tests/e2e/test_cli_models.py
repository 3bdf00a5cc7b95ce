"""The model catalog through the command line: ``[models.NAME]`` in the config file names a
model for ``exec --model NAME`` locally (the session records the NAME), and ``serve``
refuses a bad ``--model NAME=SPEC`` before it opens or binds anything (exit 2)."""

from __future__ import annotations

from clirun import Cli


def test_a_config_file_model_works_locally_and_the_session_records_its_name(cli: Cli) -> None:
    cli.home.mkdir(parents=True, exist_ok=True)
    (cli.home / "config.toml").write_text('[models.fast]\nspec = "scripted:seed=3"\n')
    uid = cli.create("--harness", "chat", "--model", "fast")
    cli.fast("exec", uid, "--input", "hi").ok()
    got = cli.fast("get", uid, "--json").ok().json()
    assert got["model"] == "fast"
    assert "scripted-3-" in cli.fast("log", uid).ok().out  # the SPEC answered
    (cli.home / "config.toml").write_text("")  # without the catalog the NAME is unknown
    run = cli.fast("exec", uid, "--input", "again").fails(2)
    assert "'fast'" in run.err and "serve --model NAME=SPEC" in run.err


def test_serve_refuses_a_bad_catalog_entry_before_listening(cli: Cli) -> None:
    for flag, why in [
        ("echo=scripted:seed=1", "provider's name"),
        ("fast=gpt-4o", "unknown model provider"),
        ("fast=", "has no spec"),
    ]:
        run = cli.fast("serve", "--listen", "127.0.0.1:0", "--model", flag).fails(2)
        assert why in run.err
    run = cli.fast("serve", "--listen", "127.0.0.1:0", "--model", "echo", "--model", "scripted")
    assert "one default model" in run.fails(2).err


def test_serve_help_tells_the_catalog(cli: Cli) -> None:
    out = cli.fast("serve", "--help").ok().out
    assert "NAME=SPEC" in out and "PERMISSION_DENIED" in out

"""``--version`` / ``-V`` (plain and ``--json``) and shell completion, as a user meets them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import Cli, clean_env

import agentsessions


@pytest.mark.parametrize(
    "args", [("--version",), ("-V",), ("--json", "--version"), ("--version", "--json")]
)
def test_the_version_plain_and_as_json(cli: Cli, args: tuple[str, ...]) -> None:
    run = cli.run(*args, home=False).ok()
    if "--json" in args:
        body = run.json()
        assert body["name"] == "agentsessions" and body["version"] == agentsessions.__version__
        assert body["python"] == ".".join(map(str, sys.version_info[:3]))
    else:
        assert run.out == f"agentsessions {agentsessions.__version__}\n"
    assert run.err == ""


def test_the_version_comes_first_and_writes_nothing(cli: Cli, tmp_path: Path) -> None:
    """``--version`` with a command prints the version only: no home is made, nothing runs."""
    home = tmp_path / "not-made"
    run = cli.run("--home", str(home), "--version", "list", home=False).ok()
    assert run.out == f"agentsessions {agentsessions.__version__}\n"
    assert not home.exists()


def test_the_completion_script_completes_commands_in_bash(tmp_path: Path) -> None:
    """``--show-completion bash`` prints a script; sourced in a real bash, it completes."""
    if shutil.which("bash") is None:
        pytest.skip("bash is not on this machine")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "agentsessions"  # what the script calls back: this checkout's CLI
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m agentsessions "$@"\n')
    shim.chmod(0o755)
    env = clean_env({"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    script = subprocess.run(
        ["agentsessions", "--show-completion", "bash"],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert "_AGENTSESSIONS_COMPLETE=complete_bash" in script
    (tmp_path / "complete.sh").write_text(script)
    complete = "_agentsessions_completion agentsessions"
    probe = (
        f"source {tmp_path / 'complete.sh'}\n"
        f"COMP_WORDS=(agentsessions li); COMP_CWORD=1; {complete}\n"
        'echo "commands: ${COMPREPLY[*]}"\n'
        f"COMP_WORDS=(agentsessions log --f); COMP_CWORD=2; {complete}\n"
        'echo "options: ${COMPREPLY[*]}"\n'
    )
    out = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", probe],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert "commands: list\n" in out
    assert "options: --from\n" in out


def test_install_completion_writes_the_script_for_the_shell(tmp_path: Path) -> None:
    env = clean_env({"HOME": str(tmp_path), "SHELL": "/bin/bash"})
    run = subprocess.run(
        [sys.executable, "-m", "agentsessions", "--install-completion", "bash"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "bash completion installed in" in run.stdout
    installed = tmp_path / ".bash_completions" / "agentsessions.sh"
    assert "_AGENTSESSIONS_COMPLETE=complete_bash" in installed.read_text()
    assert str(installed) in (tmp_path / ".bashrc").read_text()


def test_completion_falls_back_to_the_login_shell_where_none_is_detected(tmp_path: Path) -> None:
    """A command started with no shell above it (a service, a CI runner, a job whose
    parent is gone): shellingham finds none, and ``$SHELL`` names the shell instead."""
    probe = (
        "import shellingham, sys\n"
        "def undetectable(*a, **k):\n"
        "    raise shellingham.ShellDetectionFailure()\n"
        "shellingham.detect_shell = undetectable\n"
        "from agentsessions.cli.app import main\n"
        "sys.argv = ['agentsessions', '--install-completion']\n"
        "main()\n"
    )
    env = clean_env({"HOME": str(tmp_path), "SHELL": "/bin/bash"})
    run = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "bash completion installed in" in run.stdout
    nothing = subprocess.run(
        [sys.executable, "-c", probe], env={**env, "SHELL": ""}, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert nothing.returncode == 1 and "Shell None is not supported" in nothing.stdout

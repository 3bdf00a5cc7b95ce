""".ci/run proves the install: the README's test command in a throwaway venv, with CI=true.

The script runs here against a stand-in ``python3`` first on PATH (it logs its calls, and
its ``-m venv DIR`` makes a ``DIR/bin/python3`` that logs too), so the test sees which
interpreter ran each step, in which environment, and that the temporary venv is gone after.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()

SHIM = r"""#!/usr/bin/env bash
echo "$(basename "$(dirname "$(dirname "$0")")") CI=${CI:-} PATH0=${PATH%%:*} \
VIRTUAL_ENV=${VIRTUAL_ENV:-} PYTHONPATH=${PYTHONPATH:-} :: $*" >> "$SHIM_LOG"
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    mkdir -p "$3/bin" && cp "$0" "$3/bin/python3" && exit 0
fi
exit "${SHIM_EXIT:-0}"  # the venv's steps: 0, or the failure a test asks for
"""


def _readme_test_command() -> str:
    blocks = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    return str(blocks[1].strip())


def _run_ci(tmp_path: Path, exit_code: int = 0) -> tuple[int, list[str]]:
    outer = tmp_path / "outer" / "bin"
    outer.mkdir(parents=True)
    (outer / "python3").write_text(SHIM)
    (outer / "python3").chmod(0o755)
    (outer / "chromium").write_text("#!/bin/sh\n")  # present: .ci/run installs nothing here
    (outer / "chromium").chmod(0o755)
    log, work = tmp_path / "calls.log", tmp_path / "tmp"
    work.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if k != "CI"},
        "PATH": f"{outer}:/usr/bin:/bin",
        "SHIM_LOG": str(log),
        "SHIM_EXIT": str(exit_code),
        "TMPDIR": str(work),
        "PYTHONPATH": "/somewhere/by/hand",
    }
    proc = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60
    )
    assert not list(work.iterdir()), "the throwaway venv was left behind"
    return proc.returncode, log.read_text().splitlines()


def test_the_readme_test_command_is_the_last_line_of_ci() -> None:
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == _readme_test_command()
    assert _readme_test_command() == "python3 -m pip install -e '.[dev]' && python3 -m pytest -q"


def test_ci_runs_the_command_in_a_fresh_venv_with_ci_true(tmp_path: Path) -> None:
    code, calls = _run_ci(tmp_path)
    assert code == 0
    make, install, test = calls
    assert make.startswith("outer CI= ") and ":: -m venv " in make  # the host's python3
    venv = make.split(":: -m venv ", 1)[1]
    for call, args in ((install, "-m pip install -e .[dev]"), (test, "-m pytest -q")):
        assert call.startswith(f"venv CI=true PATH0={venv}/bin VIRTUAL_ENV={venv} PYTHONPATH= ")
        assert call.endswith(f":: {args}")


def test_a_failed_install_fails_ci_and_still_cleans_up(tmp_path: Path) -> None:
    code, calls = _run_ci(tmp_path, exit_code=3)
    assert code == 3 and len(calls) == 2  # venv, install: the tests did not run
    assert calls[1].endswith(":: -m pip install -e .[dev]")

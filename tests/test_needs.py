"""The rule of tests/needs.py: a missing package skips a test, and fails it under ``CI=true``.

Each case runs a small test file in a pytest of its own (a subprocess, so the outer run's
``CI`` and plugins do not leak in), with and without ``CI=true``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"

SAMPLE = """
import sys
import pytest
from needs import need, need_program, peer

def test_uses_a_missing_package():
    need("agentsessions_no_such_module", "mcp")

def test_uses_a_present_package():
    assert need("json", "dev").dumps(1) == "1"

@pytest.mark.skipif(sys.platform != "no-such-platform", reason="a platform skip")
def test_skips_for_its_platform():
    pass

def test_skips_without_torture():
    pytest.skip("set AGENTSESSIONS_TORTURE=N")

def test_uses_a_bench_peer():
    peer("agentsessions_no_such_peer")

def test_uses_a_missing_program():
    need_program("agentsessions-no-such-program", "a browser", "apt-get install -y nothing")
"""

MODULE_LEVEL = """
from needs import need
need("agentsessions_no_such_module", "nats")

def test_never_runs():
    pass
"""


def _run(tmp_path: Path, source: str, ci: str | None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(ROOT)])
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _outcomes(out: str) -> dict[str, str]:
    return dict(re.findall(r"::(test_\w+) (PASSED|FAILED|SKIPPED|ERROR)", out))


def test_a_missing_package_skips_outside_ci(tmp_path: Path) -> None:
    proc = _run(tmp_path, SAMPLE, ci=None)
    assert proc.returncode == 0, proc.stdout
    outcomes = _outcomes(proc.stdout)
    assert outcomes["test_uses_a_missing_package"] == "SKIPPED"
    assert "missing package: the 'agentsessions_no_such_module' module" in proc.stdout
    assert "pip install -e '.[mcp]'" in proc.stdout
    assert outcomes["test_uses_a_present_package"] == "PASSED"
    assert outcomes["test_uses_a_missing_program"] == "SKIPPED"
    assert "missing package: a browser is not installed (apt-get install -y nothing)" in proc.stdout


def test_a_missing_package_fails_under_ci_and_other_skips_stay(tmp_path: Path) -> None:
    proc = _run(tmp_path, SAMPLE, ci="true")
    assert proc.returncode == 1, proc.stdout
    outcomes = _outcomes(proc.stdout)
    assert outcomes == {
        "test_uses_a_missing_package": "FAILED",
        "test_uses_a_present_package": "PASSED",
        "test_skips_for_its_platform": "SKIPPED",
        "test_skips_without_torture": "SKIPPED",
        "test_uses_a_bench_peer": "SKIPPED",  # the bench extra is kept out of dev on purpose
        "test_uses_a_missing_program": "FAILED",  # a system package CI must have too
    }, proc.stdout
    assert "CI=true runs every optional feature" in proc.stdout


def test_ci_false_is_not_ci(tmp_path: Path) -> None:
    proc = _run(tmp_path, SAMPLE, ci="false")
    assert proc.returncode == 0, proc.stdout


def test_a_module_that_needs_a_missing_package_fails_its_collection_under_ci(
    tmp_path: Path,
) -> None:
    skipped = _run(tmp_path, MODULE_LEVEL, ci=None)
    assert skipped.returncode == 5 and "1 skipped" in skipped.stdout, skipped.stdout  # 5: none ran
    failed = _run(tmp_path, MODULE_LEVEL, ci="true")
    assert failed.returncode == 2 and "missing package" in failed.stdout, failed.stdout  # 2: error
    assert "test_never_runs" not in _outcomes(failed.stdout)


def test_no_test_skips_for_a_missing_package_another_way() -> None:
    """``pytest.importorskip`` or a hand-written "not installed" skip would pass CI silently."""
    pattern = re.compile(r"importorskip\(|skip(?:if)?\([^)]*not installed", re.S)
    offenders = [
        p.relative_to(ROOT).as_posix()
        for p in TESTS.rglob("*.py")
        if p.name not in ("needs.py", "test_needs.py") and pattern.search(p.read_text())
    ]
    assert not offenders, (
        f"use tests/needs.py (need, need_program, need_nats_server, need_zstd): {offenders}"
    )

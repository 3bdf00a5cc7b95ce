"""Docs are tests: the README's tour runs as written; its test command is the one CI runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from needs import need

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", README, flags=re.S)


def test_ci_runs_exactly_the_readme_test_command() -> None:
    test_command = _bash_blocks()[1].strip()
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_command in ci
    assert "agentsessions demo" in _bash_blocks()[0]


def test_tour_runs_as_written(tmp_path: Path) -> None:
    tour = next(b for b in _bash_blocks() if "agentsessions create" in b)
    fixture = tmp_path / "agentsessions" / "data"
    fixture.mkdir(parents=True)
    shutil.copy(ROOT / "agentsessions" / "data" / "go-v0.1.2-completed.json", fixture)
    env = {k: v for k, v in os.environ.items() if k != "AGENTSESSIONS_HOME"}
    env["TMPDIR"] = str(tmp_path)
    env["PYTHONPATH"] = str(ROOT)  # the tour's `agentsessions` runs this checkout's code
    # ... and is the one installed beside this interpreter (the venv the tests run in)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    try:
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", tour],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        from agentsessions.runtimes.warm import shutdown_all

        for home in tmp_path.glob("tmp.*"):  # the tour's mktemp -d home: stop its warm hosts
            shutdown_all(home)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert not (tmp_path / "session.agx").exists()  # the tour writes into its home, not here
    exports = list(tmp_path.glob("tmp.*/session.agx"))
    assert len(exports) == 1 and exports[0].stat().st_size > 0
    assert "fresh start" in result.stdout + result.stderr  # the counter's way forward ran
    assert '"seq":"4"' in result.stdout  # the imported Go journal's four records, as LogRecord JSON
    # follow and cancel: the slow turn ended CANCELED mid-answer, follow printed it committing
    assert "canceled exec=EXEC_CANCELED last_seq=15" in result.stdout
    assert "exec exited 18" in result.stdout
    assert "replayed 4 of 4 executions" in result.stdout  # the canceled turn included
    assert re.search(r"^ +14  LIFECYCLE .* CANCEL canceled by request$", result.stdout, re.M)
    assert re.search(r"^ +15  END .* END CANCELED$", result.stdout, re.M)
    assert not re.search(r"^ +\d+  OUTPUT .*word word", result.stdout, re.M)  # no answer kept
    streamed = [int(line) for line in result.stdout.splitlines() if line.strip().isdigit()]
    assert len(streamed) == 1 and streamed[0] < 600  # the essay stopped part-way


def _run_section(title: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The one Python block of README section ``title``, run with ``home`` a temp dir."""
    section = README.split(f"## {title}", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    result = subprocess.run(
        ["python3", "-c", f"home = {str(tmp_path / 'home')!r}\n{code}"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_the_library_example_runs_as_written(tmp_path: Path) -> None:
    """The "Use it as a library" section's code block, run with ``home`` set to a temp dir."""
    lines = _run_section("Use it as a library", tmp_path).stdout.splitlines()
    assert lines[0].startswith("['EVENT_EXECUTION_START'") and lines[0].endswith("'EVENT_END']")
    assert lines[1:] == ["('echo:hello',)", "12", "('echo:no stream, please',) 10"]


def test_the_sessions_by_key_example_runs_as_written(tmp_path: Path) -> None:
    """The "Find a session by a key of yours" section's code block, ``home`` a temp dir."""
    result = _run_section("Find a session by a key of yours", tmp_path)
    assert result.stdout.splitlines() == ["True False True", "5", "None"]


def test_the_openai_agents_example_runs_as_written(tmp_path: Path) -> None:
    """The "Use it with the OpenAI Agents SDK" section's code block, ``home`` a temp dir."""
    need("agents", "openai-agents")
    result = _run_section("Use it with the OpenAI Agents SDK", tmp_path)
    assert result.stdout.splitlines() == ["You are Ada.", "4", "3 4", "True"]
    assert result.stderr == ""


def test_the_langgraph_example_runs_as_written(tmp_path: Path) -> None:
    """The "Use it with LangGraph" section's code block, ``home`` a temp dir."""
    need("langgraph.graph", "langgraph")
    result = _run_section("Use it with LangGraph", tmp_path)
    assert result.stdout.splitlines() == ["You are Ada.", "6 4", "4", "True"]
    assert result.stderr == ""


def test_the_adk_example_runs_as_written(tmp_path: Path) -> None:
    """The "Use it with Google ADK" section's code block, ``home`` a temp dir."""
    need("google.adk", "adk")
    result = _run_section("Use it with Google ADK", tmp_path)
    assert result.stdout.splitlines() == [
        "1 messages so far, the last: hello",
        "2 messages so far, the last: how are you?",
        "4 Ada 2 messages",
        "True",
    ]
    assert result.stderr == ""

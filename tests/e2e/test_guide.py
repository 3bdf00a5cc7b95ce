"""The guide is a test: every bash and Python block of ``docs/`` and the README runs as
written. Blocks whose output says something are checked by tests of their own below; every
other block must exit 0 (:func:`test_every_other_block_runs`)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from guide import ROOT, Block, blocks, every_block, run_block
from needs import need, need_nats_server

CHECKED = {  # block id -> the test that runs it and checks its output
    "README.md#0": "the demo: tests/e2e/test_demo.py; the install: .ci/run",
    "README.md#1": "the test command: .ci/run (test_readme.py checks they are the same)",
    "README.md#2": "test_readme.py::test_the_ten_line_tour_runs_as_written",
    "README.md#3": "test_readme.py::test_the_library_example_runs_as_written",
    "README.md#4": "test_readme.py::test_the_github_producer_example_runs_as_written",
    "docs/index.md#0": "the same command as README.md#0",
    "docs/index.md#1": "the same command as README.md#1",
    "docs/tutorial.md#0": "test_the_tutorials_tour_runs_as_written",
    "docs/howto/library.md#0": "test_the_library_howto_runs_as_written",
    "docs/howto/library.md#1": "test_the_sessions_by_key_example_runs_as_written",
    "docs/howto/library.md#2": "test_the_origins_example_runs_as_written",
    "docs/howto/openai-agents.md#0": "test_the_openai_agents_example_runs_as_written",
    "docs/howto/langgraph.md#0": "test_the_langgraph_example_runs_as_written",
    "docs/howto/adk.md#0": "test_the_adk_example_runs_as_written",
    "docs/benchmarks/torture.md#0": "the long torture run (minutes): tests/torture runs it bounded",
    "docs/concepts/tools.md#0": "test_guide_mcp.py::test_the_mcp_example_runs_as_written",
}
CWD = {"docs/howto/zipapp.md": ROOT}  # `python3 zipapp.py` is run in a checkout
NEEDS_NATS = {"docs/howto/jetstream.md"}


def _block(page: str, index: int = 0) -> Block:
    return blocks(ROOT / page)[index]


def test_the_index_gives_the_readmes_two_commands() -> None:
    readme, index = blocks(ROOT / "README.md"), blocks(ROOT / "docs" / "index.md")
    assert [b.code for b in index[:2]] == [b.code for b in readme[:2]]


def test_every_checked_block_exists() -> None:
    ids = {b.id for b in every_block()}
    assert set(CHECKED) <= ids, set(CHECKED) - ids


@pytest.fixture(scope="module")
def nats_url() -> Iterator[str]:
    from natsserver import NatsServer

    server = NatsServer(need_nats_server()).start()
    try:
        yield server.store_url()  # with its monitoring URL: the store checks it fsyncs
    finally:
        server.stop()
        server.cleanup()


@pytest.mark.parametrize(
    "block", [b for b in every_block() if b.id not in CHECKED], ids=lambda b: b.id
)
def test_every_other_block_runs(
    block: Block, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    need("grpc", "grpc")  # the tutorial's daemon and a served harness
    env: dict[str, str] = {}
    if block.page in NEEDS_NATS:
        env["NATS_URL"] = request.getfixturevalue("nats_url")
    result = run_block(block, tmp_path, cwd=CWD.get(block.page), env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_the_tutorials_tour_runs_as_written(tmp_path: Path) -> None:
    result = run_block(_block("docs/tutorial.md"), tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    exports = list((tmp_path / "scratch").glob("tmp.*/session.agx"))
    assert len(exports) == 1 and exports[0].stat().st_size > 0  # written into its home
    pages = (tmp_path / "scratch").glob("tmp.*/chat.html")
    assert [p.read_bytes()[:15] for p in pages] == [b"<!doctype html>"]  # view wrote the page
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


def test_the_library_howto_runs_as_written(tmp_path: Path) -> None:
    result = run_block(_block("docs/howto/library.md"), tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("['EVENT_EXECUTION_START'") and lines[0].endswith("'EVENT_END']")
    assert lines[1:] == ["('echo:hello',)", "12", "('echo:no stream, please',) 10"]


def test_the_sessions_by_key_example_runs_as_written(tmp_path: Path) -> None:
    result = run_block(_block("docs/howto/library.md", 1), tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == ["True False True", "5", "None"]


def test_the_origins_example_runs_as_written(tmp_path: Path) -> None:
    result = run_block(_block("docs/howto/library.md", 2), tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == [
        "True True",
        "https://github.com/owner/repo/issues/12 github-app",
        "['octocat', None]",
    ]


def test_the_openai_agents_example_runs_as_written(tmp_path: Path) -> None:
    need("agents", "openai-agents")
    result = run_block(_block("docs/howto/openai-agents.md"), tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == ["You are Ada.", "4", "3 4", "True"]
    assert result.stderr == ""


def test_the_langgraph_example_runs_as_written(tmp_path: Path) -> None:
    need("langgraph.graph", "langgraph")
    result = run_block(_block("docs/howto/langgraph.md"), tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == ["You are Ada.", "6 4", "4", "True"]
    assert result.stderr == ""


def test_the_adk_example_runs_as_written(tmp_path: Path) -> None:
    need("google.adk", "adk")
    result = run_block(_block("docs/howto/adk.md"), tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == [
        "1 messages so far, the last: hello",
        "2 messages so far, the last: how are you?",
        "4 Ada 2 messages",
        "True",
    ]
    assert result.stderr == ""

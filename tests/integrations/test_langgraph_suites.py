"""LangGraph's own checkpointer tests, run against our ``AgentSessionsSaver`` (issue 19, part
2 "Check"), on the file store, encrypted at rest and on JetStream.

The tests are LangGraph's, never copied here: three pinned source distributions, each
checked against its sha256 and cached (``suites.py``):

- ``langgraph-checkpoint-conformance`` 0.0.2, the official conformance suite: every
  capability the saver declares (all eight: put, put_writes, get_tuple, list,
  delete_thread, delete_for_runs, copy_thread, prune; 81 tests), on every store, through
  ``langgraph_conformance.py``.
- ``langgraph-checkpoint`` 4.3.2, ``tests/test_memory.py`` with our saver behind
  ``InMemorySaver`` (``langgraph_shim.py``), on every store. Left out (:data:`LEFT_OUT`):
  the eight tests that build a thread by writing ``InMemorySaver``'s private dicts
  (``saver.storage``, ``saver.blobs``, ``saver.writes``, ``_load_blobs``), which our saver
  does not have; what they assert (``get_delta_channel_history``: writes oldest first, the
  target's own writes excluded, the walk ends at the nearest stored value, its own writes
  replayed, no seed at the root) is what the repository's conformance checks below assert
  through the public API, and our own tests too (``test_langgraph_saver.py``).
- ``langgraph`` 1.2.24, its graph tests that take a checkpointer (their ``sync_checkpointer``
  / ``async_checkpointer`` / ``durability`` fixtures are the shim's: our saver, durability
  sync, async and exit), run with ``--noconftest`` (their conftest opens SQLite, Postgres and
  Redis savers). :data:`GRAPH_FILES` on the file store: time travel (sync and async),
  interrupts, interrupt state, strict resume, subgraph persistence (sync and async),
  checkpoint migration and the DeltaChannel files that take a checkpointer (fork, subgraph,
  exit mode); :data:`CORE_FILES` (time travel and interrupts, sync and async) also
  encrypted and on JetStream, which keeps CI time bounded (the rest adds CPU, not store
  coverage). ``test_pregel.py`` / ``test_pregel_async.py`` are not run here: their
  checkpointer tests pass (see :data:`PREGEL_RESULT`), but the files are 320 tests of the
  graph runtime, most of which never touch a saver.

Repository only: the conformance package in LangGraph's repository (commit
:data:`REPO_COMMIT`, ``libs/checkpoint-conformance``) is newer than 0.0.2 and adds the
``delta_channel_history`` capability (8 tests: writes oldest first, seed is the nearest
snapshot, the target's pending writes excluded, several channels, no channels, walk to the
root without a seed, a pre-delta plain value as seed, the seed ancestor's own writes
replayed). No registry serves it, so it ran once by hand, all 9 capabilities, 89 of 89
passed, on the file store (2026-12-07); ``test_langgraph_saver.py`` keeps our own tests of
the same assertions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from needs import need

need("langgraph.checkpoint.base", "langgraph")

from stores import store_environment
from suites import prepare, run_suite

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CONFORMANCE = ("langgraph-checkpoint-conformance", "0.0.2")
CONFORMANCE_SHA256 = "6718e00937bf2f04cdfd2cdfabea23e1dabb79a534ff4c127f305f6b40dad4e0"
CHECKPOINT = ("langgraph-checkpoint", "4.3.2")
CHECKPOINT_SHA256 = "fcab8468c7e965d7055e2a35c253d73a145624ef4728b150ca7c361f4afca286"
CHECKPOINT_DEPS = ("pytest-asyncio==1.5.0",)
LANGGRAPH = ("langgraph", "1.2.24")
LANGGRAPH_SHA256 = "86b0dd611b7201cb393da2de0e064029c1bef520f11a5e6ee04be53c2a815bc7"
LANGGRAPH_DEPS = ("pytest-mock==3.17.0", "syrupy==5.1.0")
REPO_COMMIT = "f09cfe8ffc1eeffd68f4b628ed69c30f7cad229f"
CAPABILITIES = {  # capability -> tests of conformance 0.0.2 that must pass
    "put": 17,
    "put_writes": 10,
    "get_tuple": 10,
    "list": 16,
    "delete_thread": 5,
    "delete_for_runs": 7,
    "copy_thread": 8,
    "prune": 8,
}
LEFT_OUT = (  # tests/test_memory.py: they write InMemorySaver's private dicts
    "test_load_blobs_omits_delta_channel",
    "test_get_channel_writes_collects_ancestor_writes_only",
    "test_get_channel_writes_at_root_returns_empty",
    "TestBaseFallbackGetChannelWrites",
    "TestPreDeltaBlobTerminator",
)
CORE_FILES = (
    "tests/test_time_travel.py",
    "tests/test_time_travel_async.py",
    "tests/test_interruption.py",
    "tests/test_interrupt_state.py",
)
GRAPH_FILES = (
    *CORE_FILES,
    "tests/test_strict_resume.py",
    "tests/test_subgraph_persistence.py",
    "tests/test_subgraph_persistence_async.py",
    "tests/test_checkpoint_migration.py",
    "tests/test_delta_channel_fork.py",
    "tests/test_delta_channel_subgraph.py",
    "tests/test_delta_channel_exit_mode.py",
)
PASSED = {"checkpoint": 9, "core": 141, "graph": 390}  # tests of the files that must pass
PREGEL_RESULT = (
    "tests/test_pregel.py and tests/test_pregel_async.py, file store, by hand on 2026-12-07:"
    " 414 of 416 passed; the 2 that fail are syrupy snapshots of graph drawings of graphs"
    " compiled without a checkpointer, recorded under the async fixture id of their conftest"
)


@pytest.fixture
def store_env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """The environment that picks the store (and master key) the engine opens."""
    return store_environment(request.param, tmp_path, request, tag="lg")


def _path(*parts: Path) -> str:
    return os.pathsep.join([str(ROOT), str(HERE), *(str(p) for p in parts)])


@pytest.mark.parametrize("store_env", ["file", "encrypted", "jetstream"], indirect=True)
def test_the_official_conformance_suite_passes(store_env: dict[str, str], tmp_path: Path) -> None:
    root = prepare(*CONFORMANCE, CONFORMANCE_SHA256)
    env = {**store_env, "PYTHONPATH": _path(root), "TMPDIR": str(tmp_path)}
    driver = str(HERE / "langgraph_conformance.py")
    done = subprocess.run(
        [sys.executable, driver, str(tmp_path / "home")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    got = {cap: r["passed"] for cap, r in report.items() if r["detected"]}
    assert got == CAPABILITIES, report  # every capability detected, every test passed
    assert not [r["failures"] for r in report.values() if r["failed"]], report


@pytest.mark.parametrize(
    ("store_env", "suite"),
    [
        ("file", "checkpoint"),
        ("encrypted", "checkpoint"),
        ("jetstream", "checkpoint"),
        ("file", "graph"),
        ("encrypted", "core"),
        ("jetstream", "core"),
    ],
    indirect=["store_env"],
)
def test_langgraphs_own_saver_and_graph_tests_pass_with_our_saver(
    store_env: dict[str, str], suite: str, tmp_path: Path
) -> None:
    if suite == "checkpoint":
        root = prepare(*CHECKPOINT, CHECKPOINT_SHA256, CHECKPOINT_DEPS)
        keep = " and ".join(f"not {name}" for name in LEFT_OUT)
        args = ["-c", str(root / "pyproject.toml"), "-k", keep, "tests/test_memory.py"]
    else:
        root = prepare(*LANGGRAPH, LANGGRAPH_SHA256, LANGGRAPH_DEPS)
        files = GRAPH_FILES if suite == "graph" else CORE_FILES
        args = ["--noconftest", "-c", os.devnull, "--assert=plain", *files]
    env = {**store_env, "PYTHONPATH": _path(root / "_deps", root), "TMPDIR": str(tmp_path)}
    shim = ("-p", "langgraph_shim")  # our saver, before any test module imports
    run_suite(
        [*shim, "--rootdir", str(root), *args],
        root,
        env,
        PASSED[suite],
        "agentsessions-shim: N savers",
    )

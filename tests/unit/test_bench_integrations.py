"""bench/integrations.py measures what issue 19 names: each framework's own session store
against our adapter of it, the same conversation driven the same way. The figures are not
asserted (shared, noisy machines); that both sides ran, stored the whole conversation and
report every figure is."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from needs import need, peer

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "integrations.py"
STATUSES = {"ran", "not built yet", "framework not installed"}


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_integrations", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_the_quick_bench_runs_both_sides_of_the_agents_sdk_pair() -> None:
    need("agents", "openai-agents")
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--turns", "20", "--rounds", "1", "--json"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["turns"] == 20 and out["chat_journal_bytes"] > 0
    assert {p["status"] for p in out["pairs"].values()} <= STATUSES
    sdk = out["pairs"]["openai-agents"]
    assert sdk["status"] == "ran" and sdk["baseline"] == "SQLiteSession"
    assert {s["side"] for s in sdk["stores"].values()} == {"theirs", "ours"}
    for store in sdk["stores"].values():
        assert store["turns_per_s"] > 0 and store["flat"] > 0 and store["flat_p50"] > 0
        assert store["bytes"] > 0 and store["load_ms"] > 0
    ratios = sdk["ratios"]["ours (file)"]
    assert all(ratios[k] > 0 for k in ("speed", "flat", "disk_vs_chat_journal", "load"))


@pytest.mark.parametrize(
    ("module", "driver"),
    [
        ("langgraph.checkpoint.sqlite", "drive_sqlitesaver"),
        ("google.adk.sessions", "drive_adk_database"),
        ("google.adk.sessions", "drive_adk_sqlite"),
        ("google.adk.sessions", "drive_adk_memory"),
    ],
)
def test_a_framework_store_holds_the_whole_conversation(
    tmp_path: Path, module: str, driver: str
) -> None:
    """Runs only where the framework is installed (the bench venv), skipped elsewhere."""
    peer(module)
    if driver.startswith("drive_adk_database"):
        peer("sqlalchemy.ext.asyncio")
    run = getattr(_bench(), driver)(tmp_path, 3)  # SystemExit unless it holds 6 messages
    assert len(run.times) == 3 and all(t > 0 for t in run.times)
    if driver != "drive_adk_memory":
        assert run.bytes > 0 and run.load_s > 0

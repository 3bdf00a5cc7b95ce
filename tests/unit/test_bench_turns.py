"""bench/turns.py measures what issue 8 names, and its peer baselines stay bench-only.

The figures are not asserted (machines are shared and noisy); what is asserted is that the
bench measures the right things: both peak-memory commands really run on a session, the
peer baselines store the whole conversation, and their packages live in the ``bench``
extra alone, never imported by the package.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from needs import peer

ROOT = Path(__file__).resolve().parents[2]
PEERS = {"openai-agents", "langgraph", "langgraph-checkpoint-sqlite"}
# what else the bench extra holds for bench/report.py: our own extras (ours through every
# front end), ADK's SQL store's driver, the eventsourcing peer, the charts
REPORT = {"agentsessions", "sqlalchemy", "eventsourcing", "matplotlib"}


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_turns", ROOT / "bench" / "turns.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _requirement_name(requirement: str) -> str:
    return requirement.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0]


def test_the_bench_extra_holds_the_peer_baselines_and_nothing_else_does() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert {_requirement_name(r).strip() for r in extras["bench"]} == PEERS | REPORT
    for name, requirements in [("dependencies", project["dependencies"]), *extras.items()]:
        if name == "bench":
            continue
        # a framework's own extra (issue 19: agentsessions.integrations) needs the framework
        allowed = {name} if name in PEERS else set()
        assert not {_requirement_name(r).strip() for r in requirements} & PEERS - allowed, name


def test_no_module_of_the_package_imports_a_peer_baseline() -> None:
    banned = {"agents", "langgraph", "langchain_core", "langchain"}
    integrations = ROOT / "agentsessions" / "integrations"  # the frameworks' adapters only
    for path in [*ROOT.glob("agentsessions/**/*.py"), *ROOT.glob("harnesses/**/*.py")]:
        if integrations in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            assert not {n.split(".")[0] for n in names} & banned, f"{path}: {names}"


def test_replay_and_follow_peak_memory_are_both_measured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = _bench()
    peaks = bench.bench_memory(tmp_path, 50, ("replay", "follow"))
    assert set(peaks) == {"replay", "follow"}
    for big, small in peaks.values():
        assert big > 1024 and small > 1024  # KiB of a real interpreter, not a failed start
    out = capsys.readouterr().out
    assert "replay --rerun peak memory: 50 events" in out
    assert "follow peak memory: 50 events" in out


def test_the_follow_it_measures_prints_the_whole_session(tmp_path: Path) -> None:
    """The measured follow reads every stored record and exits on its own (no Ctrl-C)."""
    bench = _bench()
    uid = bench.build_session(tmp_path, 50)
    command = bench.memory_commands(tmp_path, uid)["follow"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout
    assert len(out.splitlines()) == 50


@pytest.mark.parametrize("system", ["agents-sdk", "langgraph"])
def test_a_peer_baseline_stores_the_whole_conversation(tmp_path: Path, system: str) -> None:
    """Runs only where the ``bench`` extra is installed (the bench venv), skipped elsewhere."""
    peer({"agents-sdk": "agents", "langgraph": "langgraph.checkpoint.sqlite"}[system])
    bench = _bench()
    run = {"agents-sdk": bench.run_agents_sdk, "langgraph": bench.run_langgraph}[system]
    times = run(tmp_path, 3, "t")  # SystemExit if it did not store all six messages
    assert len(times) == 3 and all(t > 0 for t in times)


def _recorded_session_calls(run: Any) -> list[tuple[str, list[list[str]]]]:
    """``run()``'s SQLiteSession calls: the method and, for add_items, each item's keys."""
    from agents import SQLiteSession

    calls: list[tuple[str, list[list[str]]]] = []
    originals = {name: getattr(SQLiteSession, name) for name in ("get_items", "add_items")}

    def recorder(name: str) -> Any:
        async def record(self: Any, *args: Any, **kwargs: Any) -> Any:
            items = args[0] if args else kwargs.get("items", [])
            calls.append((name, [sorted(item) for item in items] if name == "add_items" else []))
            return await originals[name](self, *args, **kwargs)

        return record

    try:
        for name in originals:
            setattr(SQLiteSession, name, recorder(name))
        run()
    finally:
        for name, original in originals.items():
            setattr(SQLiteSession, name, original)
    return calls


def test_the_agents_sdk_baseline_drives_the_session_as_a_real_runner_does(tmp_path: Path) -> None:
    """A real ``Runner.run`` on an offline Model makes the same session calls, same items."""
    peer("agents")
    import asyncio

    from agents import Agent, RunConfig, Runner, SQLiteSession
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    class Offline(Model):  # the SDK's own seam: an offline model, as ours is
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            text = ResponseOutputText(type="output_text", text="a" * 600, annotations=[])
            message = ResponseOutputMessage(
                id="msg_0", type="message", role="assistant", status="completed", content=[text]
            )
            return ModelResponse(output=[message], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    async def runner_turns() -> None:
        session = SQLiteSession("s", tmp_path / "runner.db")
        agent = Agent(name="a", model=Offline())
        for i in range(2):
            config = RunConfig(tracing_disabled=True)
            await Runner.run(agent, f"user {i}", session=session, run_config=config)
        session.close()

    runner = _recorded_session_calls(lambda: asyncio.run(runner_turns()))
    bench = _bench()
    ours = _recorded_session_calls(lambda: bench.run_agents_sdk(tmp_path, 2, "t"))
    assert ours[: len(runner)] == runner  # then the bench's own check reads the history once
    assert ours[len(runner) :] == [("get_items", [])]


def test_the_floor_lines_say_what_a_target_leaves_beyond_the_syncs() -> None:
    """One sync a turn at SQLite's rate: ``turn`` mode's best is 1.0x, and 0.9x leaves a
    ninth of the sync for everything else; the default mode is held to two syncs."""
    bench = _bench()
    med = {"sqlite": 1000.0, "floor-1": 1000.0, "floor-2": 500.0, "as-turn": 500.0}
    med["agentsessions"] = 250.0
    lines = bench.floors(med)
    assert lines[0].startswith("floor of agentsessions: floor-2 500 turns/s = 0.500x")
    assert "spends 2000 us beyond its syncs, 0.4x leaves 500 us" in lines[0]
    assert lines[1].startswith("floor of as-turn: floor-1 1,000 turns/s = 1.000x")
    assert "spends 1000 us beyond its syncs, 0.9x leaves 111 us" in lines[1]
    assert bench.floors({"sqlite": 1000.0}) == []  # a checkout without the rows: no line


def test_the_floor_rows_write_every_turn_into_a_preallocated_file(tmp_path: Path) -> None:
    bench = _bench()
    for syncs in (1, 2):
        assert len(bench.run_floor(tmp_path, 5, f"t{syncs}", syncs=syncs)) == 5
        data = (tmp_path / f"floor{syncs}-t{syncs}.log").read_bytes()
        assert data.startswith(b"user 0: ") and b"assistant 4: " in data
        assert len(data) == 5 * 2 * bench.TEXT_BYTES + 4096  # written in place, not appended


def test_the_work_rows_write_each_turn_as_chained_journal_groups(tmp_path: Path) -> None:
    """The unavoidable-work rows do the journal's real work: every turn's five events land
    as committed segment groups (one a turn, or two), chained and hashed as a writer's."""
    from agentsessions.journal.format import canonical, segment

    bench = _bench()
    for syncs in (1, 2):
        assert len(bench.run_work(tmp_path, 3, f"t{syncs}", syncs=syncs)) == 3
        data = (tmp_path / f"work{syncs}-t{syncs}.log").read_bytes()
        found = segment.scan(data, base=0, start=0, next_seq=1, segment=1)
        assert found.status == segment.STATUS_CLEAN and found.next_seq == 16
        groups = sum(bool(f.flags & segment.FLAG_GROUP_END) for f in found.frames)
        assert groups == 3 * syncs
        prev = ""
        for frame in found.frames:
            _body, link, seq = canonical.split_envelope(frame.payload)
            assert (link, seq) == (prev, frame.seq)
            prev = canonical.content_hash(frame.payload)
        kinds = [b'"kind":"EVENT_EXECUTION_START"', b'"kind":"EVENT_END"']
        assert all(k in found.frames[i].payload for k, i in zip(kinds, (0, 4), strict=True))


def test_the_floor_lines_split_a_turn_into_its_unavoidable_work_and_the_rest() -> None:
    bench = _bench()
    med = {"sqlite": 1000.0, "floor-1": 1000.0, "work-1": 800.0, "as-turn": 500.0}
    lines = bench.floors(med)
    assert lines[1].startswith("  work-1 (the turn's unavoidable work and syncs) 800 turns/s")
    assert "that work costs 250 us beyond the syncs, the rest of the turn 750 us" in lines[1]


def test_the_store_row_commits_each_turn_through_the_file_store_as_a_turn_does(
    tmp_path: Path,
) -> None:
    """The store row's journal holds each turn's five events as three commits (the turn's
    START+INPUT, MODEL_CALL+OUTPUT, END), read back through the store and verified."""
    from agentsessions.journal.format import segment
    from agentsessions.journal.stores.file.store import FileStore
    from agentsessions.journal.tools.verify import verify_dir

    bench = _bench()
    assert len(bench.run_store(tmp_path, 3, "t")) == 3
    store = FileStore(tmp_path / "store-t")
    try:
        (uid,) = [info.uid for info in store.list("default").sessions]
        kinds = [record.event["kind"] for record in store.read(uid)]
        assert kinds == ["EVENT_EXECUTION_START", "EVENT_INPUT", "EVENT_MODEL_CALL",
                         "EVENT_OUTPUT", "EVENT_END"] * 3  # fmt: skip
        sdir = store.session_dir(uid)
    finally:
        store.close()
    assert verify_dir(sdir).ok
    (seg,) = (sdir / "journal").glob("*.seg")
    found = segment.scan(seg.read_bytes(), base=0, start=segment.HEADER_SIZE, next_seq=1,
                         segment=1)  # fmt: skip
    assert sum(bool(f.flags & segment.FLAG_GROUP_END) for f in found.frames) == 9  # 3 a turn


def test_the_store_line_splits_the_rest_between_the_append_path_and_the_engine() -> None:
    bench = _bench()
    med = {"sqlite": 1000.0, "floor-2": 500.0, "work-2": 400.0, "store-2": 250.0}
    med["agentsessions"] = 200.0
    lines = bench.floors(med)
    assert lines[-1].startswith("  store-2 (that work committed through the file store's")
    assert "append path costs 1500 us beyond work-2, the engine 1000 us beyond" in lines[-1]


def test_the_hand_over_row_runs_each_turn_on_a_worker_and_raises_its_error() -> None:
    import threading

    bench = _bench()
    seen: list[str] = []

    def turn(uid: str | None, text: str) -> str:
        seen.append(threading.current_thread().name)
        if text == "bad":
            raise ValueError("refused")
        return f"{uid or 'new'}+{text}"

    engine = bench.handed_over(bench.Engine(turn, lambda: seen.append("closed"), "fake"))
    assert engine.turn(None, "a") == "new+a"
    with pytest.raises(ValueError, match="refused"):
        engine.turn("s", "bad")
    assert engine.turn("s", "b") == "s+b"  # the worker survives a turn's error
    engine.close()
    assert seen == ["bench hand-over"] * 3 + ["closed"]

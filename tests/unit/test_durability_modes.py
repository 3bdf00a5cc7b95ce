"""The two durability modes of a turn, on the file store: how many syncs a chat turn makes,
when its records reach the caller, and that the journal they leave is the same journal.

``step`` (the default) syncs a turn's START and INPUT at once and its answer with END: two
syncs. ``turn`` holds the turn's commits and lands them with END as one commit in one sync,
and streams its record frames only after that sync. Either way the chain verifies and a
rerun is identical (replay does not know which mode wrote a turn).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import agentsessions
from agentsessions.controller.spi import HarnessDescriptor
from agentsessions.controller.turnjournal import durability_of
from agentsessions.errors import InvalidArgumentError
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.values import RecordFrame


class CountingFS(FileSystem):
    """The real file system, counting data syncs."""

    def __init__(self) -> None:
        super().__init__()
        self.syncs = 0

    def sync(self, fd: int, *, full: bool = False) -> None:
        super().sync(fd, full=full)
        self.syncs += 1


def _engine(tmp_path: Path, durability: str = "") -> tuple[Sessions, CountingFS]:
    fs = CountingFS()
    return agentsessions.open(tmp_path, store=FileStore(tmp_path, fs=fs), durability=durability), fs


@pytest.mark.parametrize(("durability", "syncs"), [("", 2), ("step", 2), ("turn", 1)])
def test_a_chat_turn_makes_two_syncs_by_default_and_one_in_turn_mode(
    tmp_path: Path, durability: str, syncs: int
) -> None:
    engine, fs = _engine(tmp_path, durability)
    with engine:
        uid = engine.create(harness="echo").uid
        engine.run(uid, ["warm up"])
        for i in range(5):
            before = fs.syncs
            engine.run(uid, [f"turn {i}"])
            assert fs.syncs - before == syncs
        assert engine.verify(uid).ok and engine.rerun(uid).identical


def test_a_turn_names_its_own_mode_over_the_engines(tmp_path: Path) -> None:
    engine, fs = _engine(tmp_path, "turn")
    with engine:
        uid = engine.create(harness="echo").uid
        engine.run(uid, ["warm up"])  # the writer is opened (its own syncs) by a first turn
        before = fs.syncs
        engine.run(uid, ["hi"], durability="step")
        assert fs.syncs - before == 2
        with pytest.raises(InvalidArgumentError, match="durability"):
            engine.run(uid, ["hi"], durability="exit")
    with pytest.raises(InvalidArgumentError, match="durability"):
        agentsessions.open(tmp_path, durability="sometimes")


def test_in_turn_mode_records_reach_the_caller_only_after_the_one_sync(tmp_path: Path) -> None:
    engine, fs = _engine(tmp_path, "turn")
    with engine:
        uid = engine.create(harness="echo").uid
        engine.run(uid, ["warm up"])  # the writer is opened (its own syncs) by a first turn
        before = fs.syncs
        frames = engine.exec(uid, ["hi"])
        seen = [(f.record.seq, fs.syncs) for f in frames if isinstance(f, RecordFrame)]
        assert [seq for seq, _ in seen] == [6, 7, 8, 9, 10]
        assert all(at == before + 1 for _, at in seen)  # each one after the sync, none before


def test_a_turn_too_big_for_one_commit_lands_as_the_commits_it_was_made_as(
    tmp_path: Path,
) -> None:
    engine, _ = _engine(tmp_path, "turn")  # without the split the turn would be refused
    big = "x" * (2_500_000)  # the input and its echo: over the 4 MiB commit limit together
    with engine:
        uid = engine.create(harness="echo").uid
        done = engine.run(uid, [big])
        assert done.turn is not None and done.turn.outputs == ("echo:" + big,)
        kinds = [r.event["kind"] for r in engine.replay(uid)]
        assert kinds[-1] == "EVENT_END" and kinds.count("EVENT_INPUT") == 1
        assert engine.verify(uid).ok


def test_a_memory_harness_always_runs_in_step_mode() -> None:
    from agentsessions.controller.spi import REQUIRES_MEMORY_SNAPSHOT, Capabilities

    memory = HarnessDescriptor(
        "m", "1", capabilities=Capabilities(resumability=REQUIRES_MEMORY_SNAPSHOT)
    )
    assert durability_of("turn", memory) == "step"
    assert durability_of("turn", HarnessDescriptor("chat", "1")) == "turn"
    assert durability_of("", HarnessDescriptor("chat", "1")) == "step"


def test_the_modes_leave_the_same_records(tmp_path: Path) -> None:
    """The same turns leave the same records (kinds at the same seqs) in either mode."""
    kinds = []
    for mode in ("step", "turn"):
        engine, _ = _engine(tmp_path / mode, mode)
        with engine:
            uid = engine.create(harness="echo").uid
            for i in range(3):
                engine.run(uid, [f"turn {i}"])
            kinds.append([(r.seq, r.event["kind"]) for r in engine.replay(uid)])
            assert engine.verify(uid).ok
    assert kinds[0] == kinds[1]

"""A harness's working state through the controller: Start.state, Sink.state, replay, wire.

The memory harness runs on an in-process runtime that keeps its instance between turns (as
a warm host does); "losing the host" is that runtime forgetting the instance. What a user
relies on: the next turn on a fresh instance continues from the committed state, a chat
turn still syncs twice, a resumed run's repeat of a state commit is not applied twice, a
replay writes nothing and hands each run the state its live run started with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from agentsessions.controller.controller import Controller
from agentsessions.controller.registry import Registry
from agentsessions.controller.replay import replay
from agentsessions.controller.spi import (
    Capabilities,
    Harness,
    HarnessDescriptor,
    RuntimeCapabilities,
    Start,
)
from agentsessions.errors import StateConflictError, UnavailableError
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import Store, WorkingState
from agentsessions.journal.tools.verify import verify_session
from agentsessions.runtimes import warm_wire
from agentsessions.runtimes.local import LocalRuntime
from agentsessions.v1 import construct
from harnesses import counter, memory


class KeepsMemory(LocalRuntime):
    """In-process compute kept between turns, claiming what a warm host offers."""

    def capabilities(self) -> RuntimeCapabilities:
        return RuntimeCapabilities(memory_snapshot=True, snapshot_survives_host_process=True)

    def lose_host(self, session: str) -> None:
        compute = self.find(session)
        assert compute is not None
        self.stop(session, compute)


class Syncs(FileSystem):
    def __init__(self) -> None:
        super().__init__()
        self.syncs = 0

    def sync(self, fd: int, *, full: bool = False) -> None:
        self.syncs += 1
        super().sync(fd, full=full)


def _controller(store: Store, registry: Registry[Harness] | None = None) -> Controller:
    if registry is None:
        registry = Registry("harness", "agentsessions.test.none")
        registry.register("memory", memory.create)
        registry.register("counter", counter.create)
    return Controller(store, harnesses=registry, models=lambda _n: None, runtime=KeepsMemory())  # type: ignore[arg-type, return-value]


def _say(text: str) -> list[dict[str, Any]]:
    return [dict(construct.text_message("user", text))]


def test_a_fresh_instance_continues_from_the_committed_state(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    ctl = _controller(store)
    uid = ctl.exec(None, _say("remember the milk"), harness="memory").uid
    assert ctl.exec(uid, _say("remember eggs")).outputs == ["noted: eggs (2 facts)"]
    first = ctl.runtime.find(uid)
    assert first is not None and first.harness.loaded == 0  # type: ignore[attr-defined]
    assert store.state(uid).version == 2 and store.get(uid).state_version == 2
    ctl.runtime.lose_host(uid)  # type: ignore[attr-defined]
    assert ctl.exec(uid, _say("what")).outputs == ["turn 3: I remember the milk; eggs"]
    fresh = ctl.runtime.find(uid)
    assert fresh is not None and fresh is not first
    assert fresh.harness.loaded == 1  # type: ignore[attr-defined]
    ctl.close()
    # a new process (another controller, a new runtime) continues the same way
    again = _controller(FileStore(tmp_path))
    assert again.exec(uid, _say("what")).outputs == ["turn 4: I remember the milk; eggs"]
    state = again.store.state(uid)
    assert (state.version, state.author) == (4, "harness:memory")
    assert state.data == b'{"facts":["the milk","eggs"],"turns":4}'
    again.close()
    assert verify_session(FileStore(tmp_path), uid).ok


def test_a_memory_harness_without_working_state_still_cannot_outlive_its_host() -> None:
    ctl = _controller(MemoryStore())
    uid = ctl.exec(None, _say("a"), harness="counter").uid
    ctl.runtime.lose_host(uid)  # type: ignore[attr-defined]
    with pytest.raises(UnavailableError, match="memory of harness 'counter' is gone"):
        ctl.exec(uid, _say("b"))


def test_a_turn_with_a_state_commit_still_syncs_twice(tmp_path: Path) -> None:
    fs = Syncs()
    store = FileStore(tmp_path, fs=fs)
    ctl = _controller(store)
    ctl.writers.keep = 4  # a long-lived engine: the writer stays open between turns
    uid = ctl.exec(None, _say("remember a"), harness="memory").uid
    before = fs.syncs
    ctl.exec(uid, _say("remember b"))
    assert fs.syncs - before == 2  # START+INPUT; OUTPUT, the state and END in one sync
    ctl.close()
    assert store.state(uid).version == 2


class CommitsThenFails:
    """Commits its state, then fails the first time; on resume it succeeds."""

    runs: ClassVar[list[Start]] = []
    versions: ClassVar[list[int]] = []

    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(id="fails-once", version="1")

    def run(self, start: Start, sink: Any) -> None:
        CommitsThenFails.runs.append(start)
        sink.output(dict(construct.text_message("assistant", "working")))
        CommitsThenFails.versions.append(
            sink.state(b"progress", expected_version=start.state.version)
        )
        if len(CommitsThenFails.runs) == 1:
            raise RuntimeError("crashed after the state commit")


def test_a_resumed_run_does_not_apply_its_state_commit_twice() -> None:
    CommitsThenFails.runs, CommitsThenFails.versions = [], []
    store = MemoryStore()
    registry: Registry[Harness] = Registry("harness", "agentsessions.test.none")
    registry.register("fails-once", CommitsThenFails)
    ctl = _controller(store, registry)
    with pytest.raises(Exception, match="crashed after the state commit"):
        ctl.exec(None, _say("go"), harness="fails-once")
    (uid,) = store.uids()
    assert store.state(uid).version == 1  # landed before the failure
    result = ctl.resume(uid)
    assert result is not None and result.resumed
    first, second = CommitsThenFails.runs
    assert first.state.version == second.state.version == 0  # the state at the run's start
    assert CommitsThenFails.versions == [1, 1]  # the repeat got the first result
    assert store.state(uid).version == 1


class StaleCommit:
    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(id="stale", version="1")

    def run(self, start: Start, sink: Any) -> None:
        sink.state(b"one", expected_version=start.state.version)
        sink.state(b"two", expected_version=start.state.version)  # stale now


def test_a_stale_expected_version_writes_nothing_and_fails_the_turn() -> None:
    store = MemoryStore()
    registry: Registry[Harness] = Registry("harness", "agentsessions.test.none")
    registry.register("stale", StaleCommit)
    ctl = _controller(store, registry)
    with pytest.raises(StateConflictError) as err:
        ctl.exec(None, _say("go"), harness="stale")
    assert err.value.snapshot.state.data == b"one"
    (uid,) = store.uids()
    assert store.state(uid).data == b"one"
    assert [r.event["kind"] for r in store.read(uid)][-1] == "EVENT_ERROR"


def test_replay_writes_nothing_and_hands_each_run_its_starting_state(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    ctl = _controller(store)
    uid = ctl.exec(None, _say("remember a"), harness="memory").uid
    ctl.exec(uid, _say("remember b"))
    ctl.exec(uid, _say("what"))
    ctl.close()
    head = store.get(uid)
    seen: list[WorkingState] = []
    registry: Registry[Harness] = Registry("harness", "agentsessions.test.none")

    def spying() -> Harness:
        inner = memory.create()
        run = inner.run

        def spy(start: Start, sink: Any) -> None:
            seen.append(start.state)
            run(start, sink)

        inner.run = spy  # type: ignore[method-assign]
        return inner

    registry.register("memory", spying)
    result = replay(store, uid, registry)
    assert result.identical and result.replayed == 3 and result.model_calls == 0
    assert [s.version for s in seen] == [0, 1, 2]
    assert seen[2].data == b'{"facts":["a","b"],"turns":2}'
    after = store.get(uid)
    assert (after.last_seq, after.last_hash) == (head.last_seq, head.last_hash)
    assert store.state(uid).version == 3


def test_the_state_crosses_the_warm_wire() -> None:
    state = WorkingState(3, b"\x00\xffbytes", 1, 9, "harness:memory", 123)
    start = Start("e" * 16, b"", (), [], state=state)  # type: ignore[arg-type]
    back = warm_wire.start_from_wire(warm_wire.start_to_wire(start), [])  # type: ignore[arg-type]
    assert back.state == state
    old = warm_wire.start_to_wire(start)
    del old["state"]  # a frame from a caller that predates working state
    assert warm_wire.start_from_wire(old, []).state == WorkingState()  # type: ignore[arg-type]
    caps = Capabilities(working_state=True)
    desc = HarnessDescriptor(id="memory", version="1", capabilities=caps)
    wire = warm_wire.descriptor_to_wire(desc)
    assert warm_wire.descriptor_from_wire(wire).capabilities.working_state


def test_the_session_view_shows_the_state_version_range_and_size() -> None:
    from agentsessions.sessions.views import view

    store = MemoryStore()
    ctl = _controller(store)
    uid = ctl.exec(None, _say("remember x"), harness="memory").uid
    shown = view(ctl.info(uid)).to_json()["working_state"]
    assert shown == {"version": 1, "covers_from": 1, "covers_to": 3, "size": 25}
    assert view(store.get(uid)).to_json()["working_state"] == shown  # held or not, the same
    other = ctl.exec(None, _say("a"), harness="counter").uid
    assert view(store.get(other)).to_json()["working_state"] == {
        "version": 0, "covers_from": 0, "covers_to": 0, "size": 0,
    }  # fmt: skip


class Forgetful(memory.MemoryHarness):
    """A memory harness whose replay commits other bytes, or no state at all."""

    commit = True

    def run(self, start: Start, sink: Any) -> None:
        real = sink.state

        def other(data: bytes, **kw: Any) -> int:
            return int(real(data + b" ", **kw)) if Forgetful.commit else start.state.version

        sink.state = other
        super().run(start, sink)


@pytest.mark.parametrize(
    ("commit", "why"),
    [(True, "working state differs from the recorded version 1"),
     (False, "committed 0 working states, the live run 1")],
)  # fmt: skip
def test_a_replay_that_commits_another_state_diverged(
    tmp_path: Path, commit: bool, why: str
) -> None:
    store = FileStore(tmp_path)
    ctl = _controller(store)
    uid = ctl.exec(None, _say("remember a"), harness="memory").uid
    ctl.exec(uid, _say("what"))
    ctl.close()
    assert replay(store, uid, ctl.harnesses).identical
    Forgetful.commit = commit
    registry: Registry[Harness] = Registry("harness", "agentsessions.test.none")
    registry.register("memory", Forgetful)
    result = replay(store, uid, registry)
    assert not result.identical and why in result.divergence

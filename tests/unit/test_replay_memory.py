"""Replay drives a memory harness's executions in order on ONE instance (issue 7.3.2).

The journals are written here event by event, as the live controller writes them, so the
test needs no runtime: the counter's ``count:N`` outputs are only reproducible if the
instance that replays execution N has seen executions 1..N-1, and a stateless harness must
still get a fresh instance per execution.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsessions.controller.registry import Registry
from agentsessions.controller.replay import replay
from agentsessions.controller.spi import Harness, Start
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct
from harnesses import counter, echo


class Made:
    """A registry whose factories count the instances they make and record each Start."""

    def __init__(self) -> None:
        self.instances: list[Harness] = []
        self.starts: list[tuple[int, Start]] = []
        self.registry: Registry[Harness] = Registry("harness", "agentsessions.test.none")
        self.registry.register("counter", self._make(counter.create))
        self.registry.register("echo", self._make(echo.create))

    def _make(self, factory: object) -> object:
        def make() -> Harness:
            instance: Harness = factory()  # type: ignore[operator]
            self.instances.append(instance)
            run = instance.run
            index = len(self.instances) - 1

            def spy(start: Start, sink: object) -> None:
                self.starts.append((index, start))
                run(start, sink)  # type: ignore[arg-type]

            instance.run = spy  # type: ignore[method-assign]
            return instance

        return make


def counter_session(store: MemoryStore, turns: int) -> str:
    """A counter session with ``turns`` completed executions, as the warm compute wrote it."""
    uid = store.create(SessionMeta(uid=new_uid(), harness="counter")).uid
    writer = store.writer(uid)
    try:
        for n in range(1, turns + 1):
            exec_id = f"{n:016x}"
            start = construct.execution_start(
                input_count=1, harness="counter", harness_version="1", execution_id=exec_id
            )
            say = construct.text_message("user", f"turn {n}")
            answer = construct.text_message("assistant", f"count:{n}")
            for event in (
                start,
                construct.input_event(say, execution_id=exec_id),
                construct.output_event(answer, execution_id=exec_id),
                construct.end_event("COMPLETED", execution_id=exec_id),
            ):
                writer.append([event], expected_last_seq=writer.head[0])
    finally:
        writer.close()
    return uid


def test_a_memory_harness_replays_every_execution_on_one_instance() -> None:
    store, made = MemoryStore(), Made()
    uid = counter_session(store, 3)
    result = replay(store, uid, made.registry)
    assert result.identical, result.divergence
    assert (result.executions, result.replayed, result.model_calls) == (3, 3, 0)
    assert result.outputs == ["count:1", "count:2", "count:3"]
    assert len(made.instances) == 2  # one to describe, ONE to replay all three
    assert [index for index, _ in made.starts] == [1, 1, 1]


def test_the_memory_harness_gets_the_history_the_live_turn_got() -> None:
    store, made = MemoryStore(), Made()
    uid = counter_session(store, 3)
    replay(store, uid, made.registry)
    # live, each turn got every event before its EXECUTION_START (StoreHistory up to head)
    assert [len(start.history) for _, start in made.starts] == [0, 4, 8]
    assert not any(start.memory_restored for _, start in made.starts)


def test_a_stateless_harness_still_gets_a_fresh_instance_per_execution(tmp_path: Path) -> None:
    from agentsessions.journal.stores.file.store import FileStore
    from agentsessions.sessions.wiring import build_controller

    store = FileStore(tmp_path)
    ctl = build_controller(store, tmp_path, runtime="local")
    uid = store.create(SessionMeta(uid=new_uid(), harness="echo")).uid
    for text in ("a", "b", "c"):
        ctl.exec(uid, [dict(construct.text_message("user", text))])
    made = Made()
    result = replay(store, uid, made.registry, model_calls=lambda: ctl.models.calls)
    assert result.identical and result.outputs == ["echo:a", "echo:b", "echo:c"]
    assert [index for index, _ in made.starts] == [1, 2, 3]


@pytest.mark.parametrize("turns", [1, 5])
def test_the_shipped_counter_factory_replays_any_number_of_turns(turns: int) -> None:
    """With a fresh instance per execution the second one would replay as count:1."""
    store = MemoryStore()
    uid = counter_session(store, turns)
    fresh: Registry[Harness] = Registry("harness", "agentsessions.test.none")
    fresh.register("counter", counter.create)
    assert replay(store, uid, fresh).identical

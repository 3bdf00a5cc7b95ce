"""The REQUIRES_MEMORY_SNAPSHOT tier end to end, with the ``counter`` harness.

The counter keeps its count only in memory, so every assertion below on ``count:N`` is
evidence that the warm runtime really kept the harness's memory: across controllers (each
like a separate CLI process), across suspend and resume, and into forked children. On the
local runtime the tier is refused by ``can_place`` before anything is written. Both cases
run on the file store and on the memory store (the ``backend`` fixture, ``backends.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from backends import Backend

from agentsessions.controller.controller import Controller
from agentsessions.controller.lifecycle import ForkRequest, fork, resume_compute, suspend
from agentsessions.errors import PlacementError
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.runtimes.warm_launch import shutdown_all
from agentsessions.v1 import construct


@pytest.fixture
def home(backend: Backend) -> Iterator[Backend]:
    """The store backend; every warm host started under its home is ended after the test."""
    yield backend
    shutdown_all(backend.home)


def _ctl(home: Backend, runtime: str = "warm") -> Controller:
    return home.controller(runtime=runtime)


def _say(text: str) -> list[dict[str, Any]]:
    return [dict(construct.text_message("user", text))]


def test_local_runtime_refuses_the_memory_tier_before_any_write(home: Backend) -> None:
    ctl = _ctl(home, "local")
    uid = ctl.store.create(SessionMeta(uid=new_uid(), harness="counter")).uid
    with pytest.raises(PlacementError):
        ctl.exec(uid, _say("one"))
    assert ctl.store.get(uid).last_seq == 0


def test_counter_keeps_memory_across_turns_suspend_resume_and_fork(home: Backend) -> None:
    uid = _ctl(home).store.create(SessionMeta(uid=new_uid(), harness="counter")).uid
    assert _ctl(home).exec(uid, _say("a")).outputs == ["count:1"]
    assert _ctl(home).exec(uid, _say("b"), harness="counter").outputs == ["count:2"]
    ctl = _ctl(home)
    info = suspend(ctl, uid)
    assert info.compute_state == "COMPUTE_COLD" and info.snapshot
    assert info.snapshot["snapshot_memory"] is True
    assert resume_compute(_ctl(home), uid).compute_state == "COMPUTE_LIVE"
    assert _ctl(home).exec(uid, _say("c")).outputs == ["count:3"]
    with pytest.raises(PlacementError):
        fork(_ctl(home), uid, ForkRequest(at_seq=3))
    children = fork(_ctl(home), uid, ForkRequest(count=2))
    for child in children:
        assert _ctl(home).exec(child.uid, _say("child")).outputs == ["count:4"]
        assert home.verified(child.uid)
    assert _ctl(home).exec(uid, _say("d")).outputs == ["count:4"]  # parent resumed from its own
    assert home.verified(uid)

"""Warm compute made visible: listing and stopping hosts, where a session's memory lives,
and the fresh-start marker replay honours.

Hosts are real processes, reaped as in test_runtimes_warm (this process becomes a child
subreaper); every host started here is ended by ``shutdown_all`` in the fixture.
"""

from __future__ import annotations

import ctypes
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import counting_harness
import pytest

from agentsessions.controller.freshstart import (
    ReplayInstances,
    detail,
    is_marker,
    marker_seqs,
    reset_between,
)
from agentsessions.controller.registry import Registry
from agentsessions.controller.spi import Harness
from agentsessions.journal.stores.store import SessionInfo, SessionMeta
from agentsessions.runtimes import warm_dir
from agentsessions.runtimes.compute import (
    LIVE,
    SNAPSHOT,
    list_compute,
    memory_status,
    stop_compute,
)
from agentsessions.runtimes.refs import FactoryRef
from agentsessions.runtimes.warm import WarmRuntime
from agentsessions.runtimes.warm_launch import shutdown_all
from agentsessions.v1 import construct

warm_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="warm hosts need Linux")
pytestmark = [pytest.mark.timeout(120)]

COUNTER = FactoryRef("counting_harness:create")
PR_SET_CHILD_SUBREAPER = 36


@pytest.fixture(scope="module", autouse=True)
def subreaper() -> Iterator[None]:
    libc = ctypes.CDLL(None, use_errno=True)
    enabled = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    yield
    if enabled:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    shutdown_all(tmp_path)


@pytest.fixture
def runtime(home: Path) -> WarmRuntime:
    return WarmRuntime(home, idle_seconds=120, control_seconds=10, run_seconds=30)


def info(uid: str, **fields: object) -> SessionInfo:
    return SessionInfo(meta=SessionMeta(uid=uid, harness="counter"), **fields)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- list and stop


@warm_only
def test_list_shows_live_hosts_and_snapshots_under_the_session_they_belong_to(
    home: Path, runtime: WarmRuntime
) -> None:
    a = runtime.create("a", COUNTER)
    ref = runtime.snapshot("a", a)
    kids = runtime.clone(ref, ["k1", "k2"])
    before = time.time()
    hosts = list_compute(home)
    assert [(h.session, h.kind) for h in hosts] == [
        ("a", LIVE),
        ("a", SNAPSHOT),
        ("k1", SNAPSHOT),
        ("k2", SNAPSHOT),
    ]
    live = hosts[0]
    assert live.pid == a.pid and live.harness == "counting" and not live.busy
    assert [h.snapshot for h in hosts[1:]] == [ref.local, kids[0].local, kids[1].local]
    for host in hosts:
        assert host.started is not None and host.started <= before
        assert host.idle_until is not None and host.idle_until > before  # 120 s idle timeout
    assert [h.session for h in list_compute(home, "k2")] == ["k2"]
    listed = live.to_json()
    assert listed["kind"] == "live" and listed["idle_until"].endswith("Z")


@warm_only
def test_stop_ends_one_sessions_compute_and_is_idempotent(home: Path, runtime: WarmRuntime) -> None:
    a = runtime.create("a", COUNTER)
    b = runtime.create("b", COUNTER)
    ref = runtime.snapshot("a", a)
    frozen = runtime.snapshot_pid(ref)
    stopped = stop_compute(home, "a")
    assert sorted(h.pid for h in stopped) == sorted([a.pid, frozen])
    assert warm_dir.wait_gone(a.pid, 30) and frozen is not None and warm_dir.wait_gone(frozen, 30)
    assert runtime.find("a") is None and runtime.find("b") is not None
    assert stop_compute(home, "a") == []
    assert [h.pid for h in stop_compute(home)] == [b.pid]
    assert list_compute(home) == []


@warm_only
def test_listing_does_not_keep_an_idle_host_alive(home: Path) -> None:
    """A ping is not a caller: a host polled by ``compute list`` still idles out."""
    runtime = WarmRuntime(home, idle_seconds=2, control_seconds=10)
    compute = runtime.create("s", COUNTER)
    deadline = time.monotonic() + 60  # a bound for a broken host, not a timing assertion
    while list_compute(home) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list_compute(home) == []
    assert warm_dir.wait_gone(compute.pid, 30)


# --------------------------------------------------------------------------- memory status


@warm_only
def test_memory_status_says_where_the_memory_lives(home: Path, runtime: WarmRuntime) -> None:
    assert memory_status(home, info("s"), False).where == "none"
    assert memory_status(home, info("s"), None).where == "unknown"
    assert memory_status(home, info("s"), True).where == "not started"
    ran = info("s", exec_seq=1)
    assert memory_status(home, ran, True).where == "gone"
    assert "--fresh-start" in memory_status(home, ran, True).hint
    compute = runtime.create("s", COUNTER)
    live = memory_status(home, ran, True)
    assert live.where == LIVE and live.pid == compute.pid
    assert live.text.startswith(f"warm host pid {compute.pid}, idle timeout at 20")
    ref = runtime.snapshot("s", compute)
    runtime.stop("s", compute)
    cold = info(
        "s",
        exec_seq=1,
        compute_state="COMPUTE_COLD",
        snapshot={"snapshot_local": ref.local, "snapshot_memory": True},
    )
    frozen = memory_status(home, cold, True)
    assert frozen.where == SNAPSHOT and frozen.pid == runtime.snapshot_pid(ref)
    assert ref.local in frozen.text
    runtime.discard(ref)
    assert memory_status(home, cold, True).where == "gone"


# --------------------------------------------------------------------------- fresh start


def test_the_marker_is_an_ordinary_lifecycle_resume_with_a_detail() -> None:
    marker = construct.lifecycle_event("LIFECYCLE_RESUME", detail=detail(9))
    assert is_marker(marker)
    assert marker["lifecycle"]["detail"].endswith("restarts empty at seq 9")
    assert not is_marker(construct.lifecycle_event("LIFECYCLE_RESUME"))
    assert not is_marker(construct.lifecycle_event("LIFECYCLE_SUSPEND", detail=detail(9)))
    events = [(3, construct.lifecycle_event("LIFECYCLE_RESUME")), (9, marker), (12, marker)]
    assert marker_seqs(events) == [9, 12]
    assert reset_between([9], 8, 10) and not reset_between([9], 9, 12)
    assert not reset_between([9], 1, 9)


def test_replay_keeps_one_memory_instance_and_starts_over_at_a_fresh_start() -> None:
    harnesses: Registry[Harness] = Registry("harness", "no.such.group")
    harnesses.register("counting", counting_harness.create)
    descriptor = counting_harness.create().describe()
    marker = construct.lifecycle_event("LIFECYCLE_RESUME", detail=detail(9))
    instances = ReplayInstances(harnesses, "counting", descriptor, [(9, marker)])
    first = instances.for_run(1, 4)
    assert instances.for_run(5, 8) is first  # memory carries from turn to turn
    after = instances.for_run(10, 13)
    assert after is not first  # the fresh start at seq 9: an empty instance
    assert instances.for_run(14, 17) is after

"""ONE contract suite that every Runtime passes: ``local``, ``warm`` and ``auto``.

A runtime joins by adding its name to ``RUNTIMES`` (built by ``create_runtime``, as the
engine builds it). Tests skip on a capability the runtime does not claim, never on its
name. Each promise is a ``check_*`` function so that the last section can run the suite on
deliberately broken runtimes and show that it fails them.

Warm hosts are real processes: the module makes this process a child subreaper so that
hosts orphaned by their launcher are reaped, every host of a test's home is ended by
``shutdown_all`` after the test, and the test asserts that nothing was left behind.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import probe_harness
import pytest
from probe_harness import FAILURE, MEMORY, STATELESS, ListHistory, RecordingSink, start

from agentsessions.controller.controller import Controller
from agentsessions.controller.registry import Registry
from agentsessions.controller.spi import (
    Compute,
    Harness,
    HarnessFactory,
    Runtime,
    RuntimeCapabilities,
    Sink,
    SnapshotRef,
    Start,
    can_place,
)
from agentsessions.errors import (
    AgentSessionsError,
    ConflictError,
    HarnessError,
    PlacementError,
    UnavailableError,
)
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.models import create_model
from agentsessions.runtimes import create_runtime
from agentsessions.runtimes.local import LocalRuntime
from agentsessions.runtimes.warm_launch import shutdown_all
from agentsessions.v1 import construct

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="warm hosts need Linux"),
]

RUNTIMES = ("auto", "local", "warm")
PR_SET_CHILD_SUBREAPER = 36
LOST_REF = SnapshotRef(local="warm:0123456789abcdef", memory=True)
INPUTS = ("plain", "model", "stream", "report", "history", "config")
HISTORY = ListHistory([{"seq": n, "kind": "EVENT_INPUT"} for n in range(1, 6)])
CONFIG = b"\x00cfg"


@pytest.fixture(scope="module", autouse=True)
def subreaper() -> Iterator[None]:
    libc = ctypes.CDLL(None, use_errno=True)
    enabled = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    yield
    if enabled:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("AGENTSESSIONS_WARM_IDLE_SECONDS", "120")  # a leak ends by itself
    home = tmp_path / "home"
    yield home
    ended = shutdown_all(home)
    assert all(_gone(pid) for pid in ended)
    run = home / "run"
    left = sorted(p.name for p in run.iterdir()) if run.exists() else []
    assert [name for name in left if name != "warm.log"] == [], left


@pytest.fixture(params=RUNTIMES)
def runtime(request: pytest.FixtureRequest, home: Path) -> Runtime:
    return create_runtime(request.param, home=home)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def reference(*texts: str, **kw: Any) -> list[tuple[str, Any]]:
    """The effects of the stateless probe run directly in this process: the golden answer."""
    sink = RecordingSink()
    probe_harness.create().run(start(*texts, **kw), sink)
    return sink.effects


def run(compute: Compute, *texts: str, **kw: Any) -> list[tuple[str, Any]]:
    sink = RecordingSink()
    compute.harness.run(start(*texts, **kw), sink)
    return sink.effects


def outputs(compute: Compute, *texts: str) -> list[str]:
    sink = RecordingSink()
    compute.harness.run(start(*texts), sink)
    return sink.outputs()


# --------------------------------------------------------------------------- the checks


def check_capabilities(runtime: Runtime) -> RuntimeCapabilities:
    """Capabilities are typed and consistent, and ``can_place`` follows them."""
    caps = runtime.capabilities()
    assert isinstance(caps, RuntimeCapabilities)
    assert not caps.cow_fork or caps.memory_snapshot, "a cow fork is a memory snapshot copy"
    assert not caps.snapshot_survives_host_process or caps.memory_snapshot
    assert can_place(STATELESS, caps)
    assert can_place(MEMORY, caps) == caps.memory_snapshot
    return caps


def check_reference_effects(runtime: Runtime, session: str) -> None:
    """A stateless harness's effects reach the sink exactly as an in-process run's do."""
    compute = runtime.create(session, probe_harness.create)
    assert compute.harness.describe() == STATELESS
    expected = reference(*INPUTS, history=HISTORY, config=CONFIG)
    assert run(compute, *INPUTS, history=HISTORY, config=CONFIG) == expected
    assert run(compute, *INPUTS, history=HISTORY, config=CONFIG) == expected  # and again


def check_memory_snapshots(runtime: Runtime, session: str) -> None:
    """Claimed memory snapshots keep memory across snapshot, stop and restore (twice)."""
    compute = runtime.create(session, probe_harness.create_memory)
    assert outputs(compute, "a") == ["probe:a", "count:1"]
    ref = runtime.snapshot(session, compute)
    assert ref.memory, "a memory snapshot says so in its ref"
    runtime.stop(session, compute)
    assert runtime.find(session) is None
    restored = runtime.restore(session, ref)
    assert outputs(restored, "b") == ["probe:b", "count:2"]
    again = runtime.restore(session, ref)  # a retried restore attaches, it does not rewind
    assert outputs(again, "c") == ["probe:c", "count:3"]
    runtime.stop(session, again)


def check_no_memory_snapshots(runtime: Runtime, session: str) -> None:
    """Without memory snapshots: cold refs only, and a memory ref is refused clearly."""
    compute = runtime.create(session, probe_harness.create)
    ref = runtime.snapshot(session, compute)
    assert not ref.memory
    with pytest.raises((PlacementError, UnavailableError)) as caught:
        runtime.restore(session, LOST_REF)
    assert str(caught.value) and "\n" not in str(caught.value)
    runtime.stop(session, compute)


def check_stop(runtime: Runtime, session: str) -> None:
    """find sees the live compute; stop ends it (its process too), and twice is fine."""
    assert runtime.find(session) is None
    compute = runtime.create(session, probe_harness.create)
    found = runtime.find(session)
    assert found is not None and outputs(found, "x") == ["probe:x"]
    pid = getattr(compute, "pid", None)
    runtime.stop(session, compute)
    assert runtime.find(session) is None
    runtime.stop(session, compute)  # idempotent
    if pid is not None and pid != os.getpid():
        assert _gone(pid), f"stop left process {pid}"
    with pytest.raises(AgentSessionsError):
        outputs(compute, "after stop")


# --------------------------------------------------------------------------- the contract


def test_capabilities_are_honest_about_placement(runtime: Runtime) -> None:
    check_capabilities(runtime)


def test_a_stateless_harness_gives_the_same_effects_everywhere(runtime: Runtime) -> None:
    check_reference_effects(runtime, "s1")


def test_find_and_stop_are_idempotent_and_leave_no_process(runtime: Runtime) -> None:
    check_stop(runtime, "s1")


def test_memory_snapshots_where_claimed(runtime: Runtime) -> None:
    if not runtime.capabilities().memory_snapshot:
        pytest.skip("the runtime claims no memory snapshots")
    check_memory_snapshots(runtime, "s1")


def test_a_memory_snapshot_is_refused_where_not_claimed(runtime: Runtime) -> None:
    if runtime.capabilities().memory_snapshot:
        pytest.skip("the runtime claims memory snapshots")
    check_no_memory_snapshots(runtime, "s1")


def test_a_lost_memory_snapshot_is_unavailable_not_silently_cold(runtime: Runtime) -> None:
    with pytest.raises((PlacementError, UnavailableError)):
        runtime.restore("s1", LOST_REF)


def test_a_snapshot_restores_to_a_harness_with_the_same_effects(runtime: Runtime) -> None:
    compute = runtime.create("s1", probe_harness.create)
    ref = runtime.snapshot("s1", compute)
    runtime.stop("s1", compute)
    restored = runtime.restore("s1", ref)
    assert run(restored, *INPUTS, history=HISTORY) == reference(*INPUTS, history=HISTORY)
    runtime.stop("s1", restored)


def test_clone_where_claimed_children_diverge_independently(runtime: Runtime) -> None:
    if not runtime.capabilities().cow_fork:
        pytest.skip("the runtime claims no copy-on-write fork")
    compute = runtime.create("p", probe_harness.create_memory)
    assert outputs(compute, "a")[-1] == "count:1"
    refs = runtime.clone(runtime.snapshot("p", compute), ["k1", "k2"])
    assert len(refs) == 2 and all(ref.memory for ref in refs)
    k1 = runtime.restore("k1", refs[0])
    assert outputs(k1, "b")[-1] == "count:2"
    assert outputs(k1, "c")[-1] == "count:3"
    assert outputs(runtime.restore("k2", refs[1]), "b")[-1] == "count:2"
    assert outputs(compute, "d")[-1] == "count:2"  # the parent keeps its own memory


def test_clone_of_cold_refs_without_cow_fork(runtime: Runtime) -> None:
    if runtime.capabilities().cow_fork:
        pytest.skip("the runtime claims copy-on-write forks")
    assert runtime.clone(SnapshotRef(), ["k1", "k2"]) == [SnapshotRef(), SnapshotRef()]
    with pytest.raises((PlacementError, UnavailableError)):
        runtime.clone(LOST_REF, ["k1"])


def test_a_harness_failure_surfaces_with_its_message(runtime: Runtime) -> None:
    compute = runtime.create("s1", probe_harness.create)
    with pytest.raises(Exception, match=FAILURE) as caught:
        run(compute, "plain", "fail")
    # in process the harness's own exception; across a process boundary a HarnessError
    assert isinstance(caught.value, HarnessError | ValueError), type(caught.value)
    assert outputs(compute, "ok") == ["probe:ok"]  # a failed run leaves the compute usable


def test_a_sink_error_is_reraised_as_itself(runtime: Runtime) -> None:
    compute = runtime.create("s1", probe_harness.create)
    with pytest.raises(ConflictError, match="lost the race"):
        compute.harness.run(
            start("x"),
            RecordingSink(fail_output=ConflictError("lost the race", head_seq=3, head_hash="")),
        )


def test_through_the_controller_a_harness_failure_is_harness_error(runtime: Runtime) -> None:
    if not runtime.capabilities().memory_snapshot:
        pytest.skip("only a memory harness is hosted by the runtime, and it cannot be placed")
    harnesses: Registry[Harness] = Registry("harness", "agentsessions.contract-none")
    harnesses.register("memprobe", probe_harness.create_memory)
    store = MemoryStore()
    ctl = Controller(store, harnesses=harnesses, models=create_model, runtime=runtime)
    uid = store.create(SessionMeta(uid=new_uid(), harness="memprobe")).uid
    assert ctl.exec(uid, [dict(construct.text_message("user", "a"))]).outputs == [
        "probe:a",
        "count:1",
    ]
    with pytest.raises(HarnessError, match=FAILURE):
        ctl.exec(uid, [dict(construct.text_message("user", "fail"))])
    kinds = [r.event["kind"] for r in store.read(uid)]
    assert kinds[-1] == "EVENT_ERROR"
    compute = runtime.find(uid)
    assert compute is not None
    runtime.stop(uid, compute)


def test_a_memory_harness_is_refused_by_the_controller_where_it_cannot_live(
    runtime: Runtime,
) -> None:
    if runtime.capabilities().memory_snapshot:
        pytest.skip("the runtime can host a memory harness")
    harnesses: Registry[Harness] = Registry("harness", "agentsessions.contract-none")
    harnesses.register("memprobe", probe_harness.create_memory)
    store = MemoryStore()
    ctl = Controller(store, harnesses=harnesses, models=create_model, runtime=runtime)
    uid = store.create(SessionMeta(uid=new_uid(), harness="memprobe")).uid
    with pytest.raises(PlacementError):
        ctl.exec(uid, [dict(construct.text_message("user", "a"))])
    assert store.get(uid).last_seq == 0  # refused before any write


# --------------------------------------------------------------------------- the suite itself


class _DroppingSink:
    """Passes every effect on but holds the last output back (and loses it)."""

    def __init__(self, inner: Sink) -> None:
        self.inner = inner
        self.held: Any = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def output(self, message: Any) -> None:
        if self.held is not None:
            self.inner.output(self.held)
        self.held = message


class _DroppingHarness:
    def __init__(self, inner: Harness) -> None:
        self.inner = inner

    def describe(self) -> Any:
        return self.inner.describe()

    def run(self, start: Start, sink: Sink) -> None:
        self.inner.run(start, _DroppingSink(sink))


class _DroppingCompute:
    def __init__(self, inner: Compute) -> None:
        self._harness = _DroppingHarness(inner.harness)

    @property
    def harness(self) -> Harness:
        return self._harness


class DropsLastEvent(LocalRuntime):
    """A runtime whose computes lose each run's last output."""

    def create(self, session: str, factory: HarnessFactory) -> Any:
        return _DroppingCompute(super().create(session, factory))


class ClaimsSnapshots(LocalRuntime):
    """A local runtime that claims memory snapshots it cannot take."""

    def capabilities(self) -> RuntimeCapabilities:
        return RuntimeCapabilities(memory_snapshot=True)


class NeverStops(LocalRuntime):
    """A runtime whose ``stop`` forgets nothing."""

    def stop(self, session: str, compute: Compute) -> None:
        pass


class ClonesInconsistently(LocalRuntime):
    """Claims cow forks without memory snapshots."""

    def capabilities(self) -> RuntimeCapabilities:
        return RuntimeCapabilities(cow_fork=True)

    def clone(self, snapshot: SnapshotRef, sessions: Sequence[str]) -> list[SnapshotRef]:
        return []


def test_the_suite_fails_a_runtime_that_drops_the_last_event() -> None:
    with pytest.raises(AssertionError):
        check_reference_effects(DropsLastEvent(), "s1")


def test_the_suite_fails_dishonest_capabilities() -> None:
    with pytest.raises((AssertionError, AgentSessionsError)):
        check_memory_snapshots(ClaimsSnapshots(), "s1")
    with pytest.raises(AssertionError, match="cow fork"):
        check_capabilities(ClonesInconsistently())


def test_the_suite_fails_a_stop_that_does_not_stop() -> None:
    with pytest.raises(AssertionError):
        check_stop(NeverStops(), "s1")

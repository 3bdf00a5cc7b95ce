"""The local runtime (in-process, cold) and the runtime registry."""

from __future__ import annotations

from pathlib import Path

import counting_harness
import pytest
from counting_harness import FakeSink, start

from agentsessions.controller.spi import (
    STATELESS_REPLAY,
    Capabilities,
    HarnessDescriptor,
    SnapshotRef,
    can_place,
)
from agentsessions.errors import InvalidArgumentError, PlacementError, UnavailableError
from agentsessions.runtimes import RUNTIMES, create_runtime
from agentsessions.runtimes.local import LocalRuntime
from agentsessions.runtimes.warm import WarmRuntime

pytestmark = pytest.mark.timeout(30)


def run_once(runtime: LocalRuntime, session: str) -> list[str]:
    compute = runtime.find(session)
    assert compute is not None
    sink = FakeSink()
    compute.harness.run(start("hello"), sink)
    return sink.outputs


def test_local_has_no_memory_snapshot_and_refuses_a_memory_harness() -> None:
    caps = LocalRuntime().capabilities()
    assert not caps.memory_snapshot
    assert not caps.cow_fork
    assert not caps.snapshot_survives_host_process
    assert not can_place(counting_harness.DESCRIPTOR, caps)
    stateless = HarnessDescriptor(id="echo", capabilities=Capabilities(STATELESS_REPLAY))
    assert can_place(stateless, caps)


def test_create_runs_a_fresh_instance_in_process() -> None:
    runtime = LocalRuntime()
    runtime.create("s", counting_harness.create)
    assert run_once(runtime, "s") == ["count:1"]
    assert run_once(runtime, "s") == ["count:2"]
    other = LocalRuntime()
    other.create("s", counting_harness.create)
    assert run_once(other, "s") == ["count:1"]


def test_snapshot_is_cold_and_restore_starts_fresh() -> None:
    runtime = LocalRuntime()
    compute = runtime.create("s", counting_harness.create)
    assert run_once(runtime, "s") == ["count:1"]
    ref = runtime.snapshot("s", compute)
    assert ref == SnapshotRef()
    runtime.stop("s", compute)
    restored = runtime.restore("s", ref)
    sink = FakeSink()
    restored.harness.run(start("again"), sink)
    assert sink.outputs == ["count:1"]  # nothing of memory survived


def test_stop_drops_the_instance() -> None:
    runtime = LocalRuntime()
    compute = runtime.create("s", counting_harness.create)
    runtime.stop("s", compute)
    assert runtime.find("s") is None
    with pytest.raises(UnavailableError):
        _ = compute.harness
    runtime.stop("s", compute)  # idempotent


def test_memory_snapshots_are_refused() -> None:
    runtime = LocalRuntime()
    runtime.create("s", counting_harness.create)
    memory = SnapshotRef(local="warm:0123456789abcdef", memory=True)
    with pytest.raises(PlacementError):
        runtime.clone(memory, ["a", "b"])
    with pytest.raises(PlacementError):
        runtime.restore("s", memory)
    assert runtime.clone(SnapshotRef(), ["a", "b"]) == [SnapshotRef(), SnapshotRef()]


def test_restore_without_a_known_factory_is_unavailable() -> None:
    with pytest.raises(UnavailableError, match="no harness factory"):
        LocalRuntime().restore("s", SnapshotRef())


def test_registry_names_and_create_runtime(tmp_path: Path) -> None:
    assert {"local", "warm"} <= set(RUNTIMES.names())
    assert isinstance(create_runtime("local", home=tmp_path), LocalRuntime)
    warm = create_runtime("warm", home=tmp_path)
    assert isinstance(warm, WarmRuntime)
    assert warm.run_dir.path == tmp_path.absolute() / "run"
    assert warm.name == "warm"
    assert create_runtime("local", home=tmp_path).name == "local"
    with pytest.raises(InvalidArgumentError, match="unknown runtime"):
        create_runtime("no-such-runtime", home=tmp_path)
    with pytest.raises(InvalidArgumentError, match="create_runtime"):
        RUNTIMES.create("warm")

"""The warm runtime: harness memory in detached host processes, warm fork snapshots.

Hosts are real processes. This module makes the test process a child subreaper, so hosts
orphaned by their launcher become its children and can be reaped (this machine's pid 1
does not reap orphans, and a zombie still answers ``kill(pid, 0)``). Every host started
here is ended by ``shutdown_all`` in the fixture, and every wait is bounded.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import counting_harness
import pytest
from counting_harness import FakeSink, ListHistory, start

from agentsessions.controller.spi import ModelRequest, SnapshotRef, can_place
from agentsessions.errors import (
    ConflictError,
    HarnessError,
    InvalidArgumentError,
    PlacementError,
    UnavailableError,
)
from agentsessions.runtimes import warm_dir
from agentsessions.runtimes import warm_wire as wire
from agentsessions.runtimes.refs import FactoryRef, factory_ref, snapshot_id
from agentsessions.runtimes.warm import WarmCompute, WarmRuntime
from agentsessions.runtimes.warm_launch import shutdown_all
from agentsessions.runtimes.warm_probe import criu_available, probe

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="warm hosts need Linux"),
]

HERE = Path(__file__).resolve().parent
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


def run(compute: WarmCompute, *texts: str) -> list[str]:
    sink = FakeSink()
    compute.harness.run(start(*texts or ("hello",)), sink)
    return sink.outputs


def client(home: Path, *args: str) -> dict[str, object]:
    """Run ``counting_harness`` as a separate client process; its JSON result."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), *sys.path]))
    done = subprocess.run(
        [sys.executable, "-m", "counting_harness", str(home), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


# --------------------------------------------------------------------------- placement


def test_capabilities_say_what_survives(runtime: WarmRuntime) -> None:
    caps = runtime.capabilities()
    assert caps.memory_snapshot and caps.cow_fork
    assert caps.snapshot_survives_host_process
    assert not caps.snapshot_survives_reboot
    assert can_place(counting_harness.DESCRIPTOR, caps)


def test_a_factory_must_have_an_importable_name(runtime: WarmRuntime) -> None:
    assert factory_ref(counting_harness.create) == "counting_harness:create"
    with pytest.raises(PlacementError, match="importable"):
        runtime.create("s", lambda: counting_harness.create())
    with pytest.raises(PlacementError):
        FactoryRef("not a ref")


def test_a_factory_that_does_not_import_or_fails_is_reported(runtime: WarmRuntime) -> None:
    with pytest.raises(PlacementError, match="no_such_module_for_warm"):
        runtime.create("s", FactoryRef("no_such_module_for_warm:create"))
    with pytest.raises(HarnessError, match="no harness today"):
        runtime.create("s", FactoryRef("counting_harness:broken"))
    assert runtime.find("s") is None


# --------------------------------------------------------------------------- memory


def test_memory_survives_runs_and_describe_goes_over_the_socket(runtime: WarmRuntime) -> None:
    compute = runtime.create("s", COUNTER)
    assert [run(compute) for _ in range(3)] == [["count:1"], ["count:2"], ["count:3"]]
    assert compute.harness.describe() == counting_harness.DESCRIPTOR
    again = runtime.create("s", COUNTER)
    assert again.pid == compute.pid
    assert run(again) == ["count:4"]


def test_memory_survives_across_client_processes(home: Path, runtime: WarmRuntime) -> None:
    compute = runtime.create("s", COUNTER)
    assert run(compute) == ["count:1"]
    first = client(home, "s")
    second = client(home, "s")
    assert first == {"pid": compute.pid, "outputs": ["count:2"]}
    assert second == {"pid": compute.pid, "outputs": ["count:3"]}
    found = WarmRuntime(home).find("s")  # rebuilt from the session uid alone
    assert found is not None and found.pid == compute.pid
    assert run(found) == ["count:4"]


def test_a_host_started_by_an_exited_process_keeps_counting(
    home: Path, runtime: WarmRuntime
) -> None:
    first = client(home, "fresh")  # this client process starts the host, then exits
    second = client(home, "fresh")
    assert first["outputs"] == ["count:1"]
    assert second == {"pid": first["pid"], "outputs": ["count:2"]}
    found = runtime.find("fresh")
    assert found is not None and run(found) == ["count:3"]


def test_find_and_stop(runtime: WarmRuntime) -> None:
    assert runtime.find("s") is None
    compute = runtime.create("s", COUNTER)
    assert runtime.find("s") is not None
    runtime.stop("s", compute)
    assert gone(compute.pid)
    assert runtime.find("s") is None
    runtime.stop("s", compute)  # idempotent
    with pytest.raises(UnavailableError, match="no live warm host"):
        run(compute)


def test_another_factory_on_a_live_session_is_refused(runtime: WarmRuntime) -> None:
    runtime.create("s", COUNTER)
    with pytest.raises(PlacementError, match="already has a live warm host"):
        runtime.create("s", FactoryRef("counting_harness:CountingHarness"))


# --------------------------------------------------------------------------- the sink


def test_sink_calls_and_history_reads_are_answered_by_the_caller(runtime: WarmRuntime) -> None:
    compute = runtime.create("s", COUNTER)
    history = ListHistory([{"seq": str(i)} for i in range(1, 601)])  # more than one page
    sink = FakeSink()
    inputs = ("model", "history", "stream", "config")
    compute.harness.run(start(*inputs, history=history, config=b"\x00\xff"), sink)
    assert sink.outputs == [
        "model said hi",
        "history:600:['599', '600']:600",
        "config:00ff",
        "count:1",
    ]
    expected = ModelRequest(
        model="fake", messages=start(*inputs).inputs, params={"t": "0"}, tools=()
    )
    assert sink.requests == [expected]
    assert sink.deltas == ["cou", "nting"]
    assert sink.usages == [{"input_tokens": "3", "output_tokens": "1"}]


def test_a_harness_error_comes_back_as_harness_error(runtime: WarmRuntime) -> None:
    compute = runtime.create("s", COUNTER)
    assert run(compute) == ["count:1"]
    with pytest.raises(HarnessError, match="boom at count 1") as caught:
        run(compute, "fail")
    assert caught.value.fields["exception"] == "ValueError"
    assert run(compute) == ["count:2"]  # the host and its memory survive the failure


@pytest.mark.parametrize(
    "error",
    [
        ConflictError("the journal end moved", head_seq=7, head_hash="ab"),
        OSError(errno.ENOSPC, "No space left on device"),
    ],
    ids=["conflict", "enospc"],
)
def test_a_sink_error_is_reraised_as_itself(runtime: WarmRuntime, error: Exception) -> None:
    compute = runtime.create("s", COUNTER)
    with pytest.raises(type(error)) as caught:
        compute.harness.run(start("hello"), FakeSink(fail_output=error))
    assert caught.value is error
    assert run(compute) == ["count:2"]  # the count went up before the failed output


def test_a_host_killed_mid_life_is_reported(runtime: WarmRuntime) -> None:
    compute = runtime.create("s", COUNTER)
    os.kill(compute.pid, signal.SIGKILL)
    assert warm_dir.wait_gone(compute.pid, 10)
    with pytest.raises(UnavailableError, match="no live warm host"):
        run(compute)


# --------------------------------------------------------------------------- snapshots


def test_snapshot_stop_restore_continues_the_count(runtime: WarmRuntime) -> None:
    compute = runtime.create("s", COUNTER)
    assert run(compute) + run(compute) == ["count:1", "count:2"]
    ref = runtime.snapshot("s", compute)
    assert ref.memory and not ref.sealed and snapshot_id(ref) is not None
    assert run(compute) == ["count:3"]  # the live host goes on; the snapshot is frozen at 2
    runtime.stop("s", compute)
    restored = runtime.restore("s", ref)
    assert restored.pid != compute.pid
    assert run(restored) == ["count:3"]
    assert runtime.restore("s", ref).pid == restored.pid  # a retried restore attaches
    assert runtime.snapshot_pid(ref) is None  # consumed by the restore


def test_many_suspend_resume_generations(runtime: WarmRuntime) -> None:
    compute = runtime.create("s", COUNTER)
    for generation in range(1, 8):
        assert run(compute) == [f"count:{generation}"]
        ref = runtime.snapshot("s", compute)
        runtime.stop("s", compute)
        compute = runtime.restore("s", ref)
    assert run(compute) == ["count:8"]


def test_restore_in_another_process_from_the_ref_strings(home: Path, runtime: WarmRuntime) -> None:
    compute = runtime.create("s", COUNTER)
    assert run(compute) == ["count:1"]
    ref = runtime.snapshot("s", compute)
    runtime.stop("s", compute)
    result = client(home, "s", "--restore", ref.local)
    assert result["outputs"] == ["count:2"]
    assert client(home, "s")["outputs"] == ["count:3"]


def test_clone_children_continue_independently(runtime: WarmRuntime) -> None:
    parent = runtime.create("parent", COUNTER)
    assert run(parent) + run(parent) == ["count:1", "count:2"]
    ref = runtime.snapshot("parent", parent)
    runtime.stop("parent", parent)
    kids = runtime.clone(ref, ["kid-1", "kid-2"])
    assert len({k.local for k in kids} | {ref.local}) == 3
    one = runtime.restore("kid-1", kids[0])
    two = runtime.restore("kid-2", kids[1])
    assert run(one) + run(one) == ["count:3", "count:4"]
    assert run(two) == ["count:3"]
    back = runtime.restore("parent", ref)  # cloning did not consume the parent's snapshot
    assert run(back) == ["count:3"]
    assert len({one.pid, two.pid, back.pid}) == 3


def test_restore_of_a_killed_snapshot_is_unavailable(runtime: WarmRuntime) -> None:
    compute = runtime.create("s", COUNTER)
    run(compute)
    ref = runtime.snapshot("s", compute)
    runtime.stop("s", compute)
    pid = runtime.snapshot_pid(ref)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert warm_dir.wait_gone(pid, 10)
    with pytest.raises(UnavailableError) as caught:
        runtime.restore("s", ref)
    assert ref.local in str(caught.value)
    assert "resumed cold" in str(caught.value)
    assert caught.value.fields["snapshot"] == ref.local
    with pytest.raises(UnavailableError, match=ref.local):
        runtime.clone(ref, ["kid"])


def test_a_ref_without_memory_restores_cold(home: Path, runtime: WarmRuntime) -> None:
    compute = runtime.create("s", COUNTER)
    run(compute)
    fresh = runtime.restore("s", SnapshotRef())
    assert run(fresh) == ["count:1"]
    with pytest.raises(UnavailableError, match="holds no memory"):
        WarmRuntime(home).restore("s", SnapshotRef())
    assert runtime.clone(SnapshotRef(), ["a"]) == [SnapshotRef()]
    with pytest.raises(PlacementError):
        runtime.restore("s", SnapshotRef(local="criu:/x", memory=True))


# --------------------------------------------------------------------------- hygiene


def test_shutdown_all_leaves_no_process(home: Path, runtime: WarmRuntime) -> None:
    a = runtime.create("a", COUNTER)
    b = runtime.create("b", COUNTER)
    ref = runtime.snapshot("a", a)
    kids = runtime.clone(ref, ["k1", "k2"])
    frozen = [runtime.snapshot_pid(r) for r in (ref, *kids)]
    pids = {a.pid, b.pid, *(p for p in frozen if p is not None)}
    assert len(pids) == 5
    assert set(shutdown_all(home)) == pids
    assert all(gone(pid) for pid in pids)
    leftovers = sorted(p.name for p in (home / "run").iterdir())
    assert leftovers == ["warm.log"]


def test_a_host_exits_after_its_idle_timeout(home: Path) -> None:
    runtime = WarmRuntime(home, idle_seconds=2)
    compute = runtime.create("s", COUNTER)
    ref = runtime.snapshot("s", compute)
    frozen = runtime.snapshot_pid(ref)
    assert frozen is not None
    assert warm_dir.wait_gone(compute.pid, 30)
    assert warm_dir.wait_gone(frozen, 30)
    assert runtime.find("s") is None
    assert not list((home / "run").glob("*.sock"))


def test_sockets_are_private_and_long_homes_use_short_paths(tmp_path: Path) -> None:
    home = tmp_path / ("h" * 120)
    try:
        runtime = WarmRuntime(home, idle_seconds=120)
        compute = runtime.create("s", COUNTER)
        assert len(os.fsencode(compute.socket)) <= 100
        assert compute.socket.startswith(f"/tmp/agentsessions-{os.getuid()}/")
        assert stat.S_IMODE(os.stat(compute.socket).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(home / "run").st_mode) == 0o700
        assert run(compute) == ["count:1"]
        state = warm_dir.read_state(home / "run" / "live-s.json")
        assert state is not None and state["socket"] == compute.socket
    finally:
        shutdown_all(home)


def test_odd_session_uids_get_hashed_names(runtime: WarmRuntime) -> None:
    endpoint = runtime.run_dir.live("../evil/session uid")
    assert "/" not in Path(endpoint.socket).name and ".." not in Path(endpoint.socket).name
    assert runtime.run_dir.live("01HZX-abc").stem == "live-01HZX-abc"


def test_snapshot_ids_cannot_name_paths() -> None:
    assert snapshot_id(SnapshotRef(local="warm:../../etc/passwd", memory=True)) is None
    assert snapshot_id(SnapshotRef(local="warm:0123456789abcdef", memory=False)) is None
    assert snapshot_id(SnapshotRef(local="warm:0123456789abcdef", memory=True)) == (
        "0123456789abcdef"
    )


def test_probe_reports_criu_honestly() -> None:
    report = probe()
    assert isinstance(report["criu"], bool)
    assert report["warm_snapshots"] is True
    assert report["warm_snapshot_survives_reboot"] is False
    assert report["checkpoint_to_disk_used"] is False
    assert criu_available(binary="no-such-criu-binary-here") is False


# --------------------------------------------------------------------------- the wire


def test_frames_round_trip_and_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    left, right = socket.socketpair()
    with left, right:
        wire.send(left, {"op": "x", "text": "héllo"})
        assert wire.recv(right, 5) == {"op": "x", "text": "héllo"}
        monkeypatch.setattr(wire, "MAX_FRAME", 8)
        with pytest.raises(wire.ProtocolError):
            wire.send(left, {"op": "too long for eight bytes"})
        right.sendall(b"\x00\x00\x10\x00")
        with pytest.raises(wire.ProtocolError):
            wire.recv(left, 5)
    one, two = socket.socketpair()
    with one, two:
        one.sendall(b"\x00\x00")
        one.close()
        with pytest.raises(wire.PeerGone):
            wire.recv(two, 5)


def test_codecs_round_trip() -> None:
    begun = start("a", "b", config=b"\x01\x02")
    decoded = wire.start_from_wire(json.loads(json.dumps(wire.start_to_wire(begun))), begun.history)
    assert decoded == begun
    request = ModelRequest(model="m", messages=begun.inputs, params={"k": "v"})
    assert wire.request_from_wire(json.loads(json.dumps(wire.request_to_wire(request)))) == (
        request
    )
    descriptor = counting_harness.DESCRIPTOR
    assert wire.descriptor_from_wire(wire.descriptor_to_wire(descriptor)) == descriptor


def test_the_idle_timeout_comes_from_the_environment(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTSESSIONS_WARM_IDLE_SECONDS", "5")
    assert WarmRuntime(home).idle_seconds == 5
    monkeypatch.setenv("AGENTSESSIONS_WARM_IDLE_SECONDS", "soon")
    with pytest.raises(InvalidArgumentError, match="AGENTSESSIONS_WARM_IDLE_SECONDS"):
        WarmRuntime(home)
    monkeypatch.delenv("AGENTSESSIONS_WARM_IDLE_SECONDS")
    assert WarmRuntime(home).idle_seconds == 3600


def test_a_sessionless_exec_whose_host_cannot_start_creates_no_session(
    runtime: WarmRuntime,
) -> None:
    """The warm host was started after the new session existed: a plugin factory with no
    importable name failed the exec (PlacementError) and left a 0-record session behind."""
    from agentsessions.controller.controller import Controller
    from agentsessions.controller.registry import Registry
    from agentsessions.controller.spi import Harness
    from agentsessions.journal.stores.memory.store import MemoryStore
    from agentsessions.models import create_model
    from agentsessions.v1 import construct

    store = MemoryStore()
    harnesses: Registry[Harness] = Registry("harness", "agentsessions.harnesses")
    harnesses.register("counting", lambda: counting_harness.create())  # no 'module:attr'
    ctl = Controller(store, harnesses=harnesses, models=create_model, runtime=runtime)
    hello = [construct.text_message("user", "hello")]
    with pytest.raises(PlacementError, match="importable"):
        ctl.exec(None, hello, harness="counting")
    assert store.list("default").sessions == []
    harnesses.register("counting", COUNTER)  # an importable factory runs as before
    assert ctl.exec(None, hello, harness="counting").uid
    assert len(store.list("default").sessions) == 1

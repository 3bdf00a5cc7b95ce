"""The syncs of a turn (spec decision 11): the fewest the invariants allow, and honest.

The turn's START+INPUT is durable at once, everything recorded is durable before anything
leaves the process (a model call is sent only after what it is sent is synced), END is
durable before exec returns, and the commits in between (MODEL_CALL with its OUTPUT, the
harness's outputs) ride with the next sync. A caller is told of a record
only once it is durable; a power loss takes only unsynced commits, never one acknowledged,
leaves no false evidence behind (the TAIL hint names durable commits only), and resume
makes the cut model call once more.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentsessions.controller.controller import Controller
from agentsessions.controller.held import KEEP_LONG_LIVED
from agentsessions.controller.registry import Registry
from agentsessions.controller.spi import Completion, HarnessDescriptor, ModelRequest, Start
from agentsessions.journal.format.durable import CrashFileSystem, FileSystem
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_session
from agentsessions.runtimes import create_runtime
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.v1 import construct


class SyncCountingFileSystem(FileSystem):
    def __init__(self) -> None:
        super().__init__()
        self.syncs = 0

    def sync(self, fd: int, *, full: bool = False) -> None:
        self.syncs += 1
        super().sync(fd, full=full)


class Model:
    """A model that notes how many syncs had happened when it was called."""

    def __init__(self, fs: SyncCountingFileSystem | None = None) -> None:
        self.fs = fs
        self.seen_syncs: list[int] = []

    def complete(self, request: ModelRequest, on_delta: Any = None) -> Completion:
        if self.fs is not None:
            self.seen_syncs.append(self.fs.syncs)
        return Completion(dict(construct.text_message("assistant", "answer")))


def _controller(store: FileStore, provider: Any) -> Controller:
    return Controller(
        store,
        harnesses=HARNESSES,
        models=lambda _name: provider,
        runtime=create_runtime("local", home=store.home),
        default_model="test",
        keep_writers=KEEP_LONG_LIVED,
    )


def _say(text: str) -> list[dict[str, Any]]:
    return [dict(construct.text_message("user", text))]


def test_the_input_is_durable_before_the_model_call_and_records_are_told_when_durable(
    tmp_path: Path,
) -> None:
    fs = SyncCountingFileSystem()
    store = FileStore(tmp_path, fs=fs)
    provider = Model(fs)
    ctl = _controller(store, provider)
    told: list[tuple[str, int]] = []

    def on_record(record: Record) -> None:
        told.append((str(record.event["kind"]), fs.syncs))

    uid = ctl.exec(None, _say("first"), harness="chat").uid  # opens the writer
    ctl.on_record = on_record
    before = fs.syncs
    ctl.exec(uid, _say("second"))
    assert fs.syncs - before == 2
    assert provider.seen_syncs[-1] == before + 1  # START+INPUT synced before the call
    assert told == [
        ("EVENT_EXECUTION_START", before + 1),
        ("EVENT_INPUT", before + 1),
        ("EVENT_MODEL_CALL", before + 2),  # told only once END's sync covered it
        ("EVENT_OUTPUT", before + 2),
        ("EVENT_END", before + 2),
    ]
    ctl.close()
    assert verify_session(store, uid).ok


class Outputs:
    """A harness that answers without a model: two outputs."""

    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(id="outputs", version="1")

    def run(self, start: Start, sink: Any) -> None:
        sink.output(dict(construct.text_message("assistant", "one")))
        sink.output(dict(construct.text_message("assistant", "two")))


def test_a_turn_without_a_model_call_syncs_at_its_start_and_its_end(tmp_path: Path) -> None:
    fs = SyncCountingFileSystem()
    store = FileStore(tmp_path, fs=fs)
    ctl = _controller(store, Model())
    registry: Registry[Any] = Registry("harness", "agentsessions.test-harnesses")
    registry.register("outputs", Outputs)
    ctl.harnesses = registry
    uid = ctl.exec(None, _say("a"), harness="outputs").uid
    before = fs.syncs
    ctl.exec(uid, _say("b"))
    assert fs.syncs - before == 2  # START+INPUT; both OUTPUTs ride with END
    ctl.close()


class PowerLoss(BaseException):
    """Raised by the model after the harness's unsynced commits: the machine goes down."""


def test_a_power_loss_takes_only_unsynced_commits_and_the_turn_resumes(tmp_path: Path) -> None:
    fs = CrashFileSystem()
    store = FileStore(tmp_path, fs=fs)
    calls: list[int] = []

    class TwoCallHarnessModel:
        def complete(self, request: ModelRequest, on_delta: Any = None) -> Completion:
            calls.append(len(request.messages))
            return Completion(dict(construct.text_message("assistant", f"answer {len(calls)}")))

    ctl = _controller(store, TwoCallHarnessModel())
    uid = ctl.exec(None, _say("kept"), harness="chat").uid
    acked = store.get(uid).last_seq  # END of turn 1: acknowledged

    # Turn 2 lands START+INPUT (synced before the call), then MODEL_CALL+OUTPUT unsynced;
    # the power goes before END's sync: nothing more runs in this process (no close, no
    # hint), and the disk keeps only what was synced.
    writer = ctl.writers.get(uid)
    assert writer is not None
    inner: Any = writer.inner
    real_append = inner.append
    landed: list[str] = []

    def append_then_lose_power(events: Any, **kw: Any) -> Any:
        if events and events[0].get("kind") == "EVENT_END":
            landed.extend(str(r.event["kind"]) for r in store.read(uid))
            raise PowerLoss
        return real_append(events, **kw)

    def power_is_gone() -> None:  # what the controller's clean-up would do never happens
        fs.crash()  # closes every descriptor it opened, the lock's with them
        inner._lock.release()

    inner.append = append_then_lose_power
    inner.close = power_is_gone
    with pytest.raises(PowerLoss):
        ctl.exec(uid, _say("second"))
    assert landed[-2:] == ["EVENT_MODEL_CALL", "EVENT_OUTPUT"]  # landed, not yet durable

    after = FileStore(tmp_path)
    report = verify_session(after, uid)
    assert report.ok, report  # no acknowledged seq is missing: the hint named none of them
    kinds = [str(r.event["kind"]) for r in after.read(uid)]
    assert after.get(uid).last_seq == acked + 2  # START+INPUT of turn 2 survived
    assert kinds[-2:] == ["EVENT_EXECUTION_START", "EVENT_INPUT"]
    again = _controller(after, TwoCallHarnessModel())
    result = again.resume(uid)
    assert result is not None and result.model_calls == 1  # the cut call is made once more
    kinds = [str(r.event["kind"]) for r in after.read(uid)]
    assert kinds[-3:] == ["EVENT_MODEL_CALL", "EVENT_OUTPUT", "EVENT_END"]
    again.close()
    assert verify_session(after, uid).ok


def test_a_writer_closed_with_unsynced_commits_syncs_them_before_its_hint(tmp_path: Path) -> None:
    fs = CrashFileSystem()
    store = FileStore(tmp_path, fs=fs)
    uid = store.create(SessionMeta(uid=new_uid())).uid
    with store.writer(uid) as w:
        xid = "0" * 16
        w.append([construct.execution_start(input_count=0, harness="echo", execution_id=xid)])
        w.append([construct.end_event("COMPLETED", execution_id=xid)], sync=False)
    fs.crash()
    after = FileStore(tmp_path)
    assert verify_session(after, uid).ok
    assert after.get(uid).last_seq == 2  # close made it durable, then wrote the hint

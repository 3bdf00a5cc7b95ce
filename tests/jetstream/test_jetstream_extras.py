"""The file store's extras on JetStream (issue 11): workloads (``exec --tools``), tool
receipts, cancel requests from another host, harness registrations, damaged metadata.

Each runs against the real durable server of the test run, in a stream of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentsessions.controller.controller import Controller
from agentsessions.controller.spi import BoundTool, ToolOutcome, ToolRequest
from agentsessions.journal.stores.jetstream import extras
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.runtimes import create_runtime
from agentsessions.sessions.harnessbook import records_for
from agentsessions.sessions.storeurl import STORE_ENV
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.tools import AppendLine, static_resolver
from agentsessions.v1 import construct
from tests.e2e.clirun import Cli
from tests.tool_harness import ToolLineHarness, line_call, plan

ROOT = Path(__file__).resolve().parents[2]
BOUND = 120  # a hang becomes a failure; no assertion is timed

HARNESSES.register("tool-line", ToolLineHarness)


def _url(server: Any) -> str:
    token = new_uid()[5:17]
    return str(server.store_url(stream=f"X{token}", prefix=f"x{token}"))


def _open(url: str, master: Any = None) -> JetStreamStore:
    return JetStreamStore(JetStreamOptions.parse(url), master=master)


def _cli(home: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The command line on the stream at ``url``, in-process (typer's CliRunner); the turn a
    cancel stops stays a process, and test_jetstream_cli.py covers the store's variable."""
    run = Cli(home, Path.cwd()).fast("--home", str(home), "--store", url, *args, home=False)
    return subprocess.CompletedProcess(list(args), run.code, run.out, run.err)


def _workload(tmp_path: Path) -> tuple[Path, Path]:
    effects = tmp_path / "notes.txt"
    toml = tmp_path / "tools.toml"
    toml.write_text(
        "[tools.append_line]\n"
        'mediation = "mediated"\n'
        'executor = "append_line"\n'
        'parameters = { type = "object", properties = { line = { type = "string" } } }\n'
        f"config = {{ path = {json.dumps(str(effects))} }}\n"
    )
    return toml, effects


def test_exec_with_tools_runs_a_mediated_call_once_and_replays_without_calls(
    nats_server: Any, tmp_path: Path
) -> None:
    url = _url(nats_server)
    tools, effects = _workload(tmp_path)
    script = tmp_path / "script.json"
    call = {"name": "append_line", "arguments": {"line": "buy milk"}}
    script.write_text(json.dumps([{"text": "Noting.", "tool_calls": [call]}, "Done."]))
    run = _cli(tmp_path, url, "exec", "--harness", "chat", "--model", f"scripted:file={script}",
               "--tools", str(tools), "--input", "note: buy milk", "--json")  # fmt: skip
    assert run.returncode == 0, run.stderr
    uid = json.loads(run.stdout)["uid"]
    assert effects.read_text() == "buy milk\n"
    log = _cli(tmp_path, url, "log", uid).stdout
    assert "TOOL_CALL" in log and "TOOL_RESULT" in log
    replay = _cli(tmp_path, url, "replay", uid, "--rerun", "--json")
    assert replay.returncode == 0, replay.stderr
    got = json.loads(replay.stdout)
    assert got["identical"] is True and got["model_calls"] == 0
    assert effects.read_text() == "buy milk\n"  # no executor call either
    assert not list(tmp_path.glob("**/WORKLOAD*"))  # kept in the stream, not in the home
    store = _open(url)
    try:  # another host sees the same workload, by its digest too
        text = store.workload(uid)
        assert text is not None and "append_line" in text
        assert store.workload_at(uid, store.keep_workload(uid, text)) == text
    finally:
        store.close()


def test_a_cancel_from_another_process_stops_the_running_turn(
    nats_server: Any, tmp_path: Path
) -> None:
    url = _url(nats_server)
    made = _cli(tmp_path, url, "exec", "--harness", "chat", "--model", "scripted:seed=7",
                "--input", "hi", "--json")  # fmt: skip
    uid = json.loads(made.stdout)["uid"]
    essay = tmp_path / "essay.json"
    essay.write_text(json.dumps([" ".join(["word"] * 600)]))
    env = {**os.environ, "PYTHONPATH": str(ROOT), STORE_ENV: url}
    argv = [sys.executable, "-m", "agentsessions", "--home", str(tmp_path), "exec", uid,
            "--model", f"scripted:file={essay},delay=60", "--input", "write an essay"]  # fmt: skip
    with subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as turn:
        store = _open(url)
        try:  # the turn runs once its writer is live (no timing: the state says so)
            while not (store.writer_elsewhere(uid) and store.get(uid).exec_state == "EXEC_RUNNING"):
                assert turn.poll() is None, "the turn ended before the cancel"
        finally:
            store.close()
        cancel = _cli(tmp_path, url, "cancel", uid)
        assert cancel.returncode == 0, cancel.stderr
        assert turn.wait(BOUND) == 18  # canceled by request, not fenced (exit 5)
    log = _cli(tmp_path, url, "log", uid).stdout.splitlines()
    assert "CANCEL canceled by request" in log[-2] and "END CANCELED" in log[-1]
    assert _cli(tmp_path, url, "cancel", uid).returncode == 0  # idempotent once canceled
    assert _cli(tmp_path, url, "verify", uid).returncode == 0


def test_the_cancel_check_costs_no_round_trip_until_a_request_lands(nats_server: Any) -> None:
    url = _url(nats_server)
    host_a, host_b = _open(url), _open(url)
    try:
        uid = new_uid()
        host_a.create(SessionMeta(uid=uid))
        assert host_a.cancel_requested(uid) is None  # the first check reads the stream
        before = host_a.cancels.reads
        for _ in range(50):
            assert host_a.cancel_requested(uid) is None
        assert host_a.cancels.reads == before  # the other 50 came from memory
        host_b.request_cancel(uid, "exec-1", "USER")  # another host, acknowledged
        # its wake-up arrives on the subscription; checks read again only then
        while host_a.cancel_requested(uid) is None:
            pass
        assert host_a.cancel_requested(uid) == "exec-1" and host_a.cancel_reason(uid) == "USER"
        host_a.clear_cancel(uid)
        host_a.clear_cancel(uid)  # idempotent: nothing more is written
        subjects = host_a._client.subjects(extras.cancel_subject(host_a._opts.prefix, uid))
        assert list(subjects.values()) == [2]  # the request and one clear
        while host_b.cancel_requested(uid) is not None:
            pass
    finally:
        host_a.close()
        host_b.close()


class _Die(BaseException):
    pass


@pytest.mark.parametrize("encrypted", [False, True], ids=["plaintext", "encrypted"])
def test_a_receipt_kept_on_one_host_answers_the_resume_on_another(
    nats_server: Any, tmp_path: Path, encrypted: bool
) -> None:
    """The process dies after its executor ran and its receipt was acknowledged, before
    TOOL_RESULT: a resume from another store object serves the receipt, never runs again
    (in an encrypted session too: the receipt is sealed, its subject a MAC of its key)."""
    from agentsessions.journal.crypto.keys import MasterKey

    url = _url(nats_server)
    master = MasterKey.generate() if encrypted else None
    effects = tmp_path / "effects.txt"
    first = _open(url, master)
    uid = new_uid()
    first.create(SessionMeta(uid=uid, harness="tool-line"))
    original = first.record_tool_receipt

    def record_then_die(uid: str, key: str, receipt: Any) -> None:
        original(uid, key, receipt)
        raise _Die()

    first.record_tool_receipt = record_then_die  # type: ignore[method-assign]
    try:
        with pytest.raises(_Die):
            _controller(first, AppendLine(), effects, tmp_path).exec(
                uid,
                [dict(construct.text_message("user", "go"))],
                config=plan(line_call("c1", "once")),
            )
    finally:
        first.close()
    assert effects.read_text() == "once\n"

    class Counting:
        calls = 0

        def call(self, request: ToolRequest) -> ToolOutcome:
            Counting.calls += 1
            return AppendLine().call(request)

    second = _open(url, master)
    try:
        assert second.get(uid).meta.encrypted is encrypted
        kinds = [r.event["kind"] for r in second.read(uid)]
        assert kinds[-1] == "EVENT_TOOL_CALL"
        result = _controller(second, Counting(), effects, tmp_path).resume(uid)
        assert result is not None and Counting.calls == 0
        assert effects.read_text() == "once\n"  # exactly one effect
        kinds = [r.event["kind"] for r in second.read(uid)]
        assert kinds.count("EVENT_TOOL_RESULT") == 1 and kinds[-1] == "EVENT_END"
        assert second.tool_receipt(uid, "no such key") is None
    finally:
        second.close()


def _controller(store: Any, executor: Any, effects: Path, home: Path) -> Controller:
    from agentsessions.models import create_model

    tools = {"append": BoundTool("append", executor, {"path": str(effects)})}
    return Controller(
        store, harnesses=HARNESSES, models=create_model,
        runtime=create_runtime("local", home=home), tools=static_resolver(tools), keep_writers=0,
    )  # fmt: skip


def test_workloads_are_kept_once_by_digest_and_registrations_are_shared(
    nats_server: Any,
) -> None:
    url = _url(nats_server)
    host_a, host_b = _open(url), _open(url)
    try:
        uid = new_uid()
        host_a.create(SessionMeta(uid=uid))
        digest = host_a.keep_workload(uid, "[tools]\n")
        assert host_b.keep_workload(uid, "[tools]\n") == digest  # found there, not rewritten
        kept = extras.kept_workload_subject(host_a._opts.prefix, uid, digest)
        assert list(host_a._client.subjects(kept).values()) == [1]
        assert host_b.workload_at(uid, digest) == "[tools]\n"
        assert host_b.workload_at(uid, "0" * 64) is None and host_b.workload_at(uid, "x") is None
        host_a.set_workload(uid, "[tools.a]\n")
        while host_b.workload(uid) != "[tools.a]\n":  # its subscription says it changed
            pass

        def add(data: dict[str, Any]) -> bool:
            data["remote-1"] = {"name": "remote-1"}
            return True

        records_for(host_a).update(add)
        assert records_for(host_b).read() == {"remote-1": {"name": "remote-1"}}
    finally:
        host_a.close()
        host_b.close()


def test_a_damaged_metadata_message_is_reported_not_listed(nats_server: Any) -> None:
    url = _url(nats_server)
    store = _open(url)
    try:
        good = new_uid()
        store.create(SessionMeta(uid=good))
        bad = new_uid()
        subject = f"{store._opts.prefix}.m.{bad}"
        assert store._client.publish(subject, b"not json\n", expect=0, token="t") is not None
        page = store.list("default")
        assert [s.uid for s in page.sessions] == [good]
        assert [e.fields["session"] for e in page.unindexed] == [bad]
        assert "is damaged" in page.unindexed[0].message
    finally:
        store.close()

"""The report's conversation drivers: one 2,000-turn chat of 600-byte messages on each store.

Each driver has the shape of :data:`integrations.Driver`: ``(where, turns) -> Run``, the
seconds of every turn (so the report can draw the growth curve), the bytes at rest under
``where``, and the seconds a *new* instance takes to read the whole conversation back. The
framework stores (the Agents SDK's ``SQLiteSession``, LangGraph's ``SqliteSaver``, ADK's
``DatabaseSessionService``) and our adapters of them are :mod:`integrations`'s; this module
adds the rest:

- ``sqlite``: SQLite WAL synchronous=FULL, the turn's two rows in one transaction (the Go
  reference's storage): the baseline every ratio is against;
- ``fdatasync``: one write + fdatasync a turn (the physical floor);
- ``ours``: ``agentsessions.open()``, one ``Sessions.run`` a turn; ``ours (streamed)``:
  ``Sessions.exec`` iterated to its end; ``ours (gRPC)``: the same through
  ``agentsessions.client.dial`` to a local ``agentsessions serve``; ``ours (CLI)``: one
  ``agentsessions exec`` process a turn (fewer turns: it measures the process, not growth);
- ``eventsourcing``: the Python eventsourcing library's Application and Aggregate on its
  SQLite persistence, used as its documentation shows (get the aggregate, trigger two
  events, save): it rebuilds the aggregate from its events at each turn, as its default does.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from integrations import Run, footprint
from turns import _answers, _text, open_engine, run_raw, run_sqlite

ROOT = Path(__file__).resolve().parents[1]


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def drive_sqlite(where: Path, turns: int) -> Run:
    times = run_sqlite(where, turns, "t")
    db = where / "sqlite-t.db"

    def load() -> None:
        conn = sqlite3.connect(db)
        rows = conn.execute("SELECT body FROM events WHERE session = 's' ORDER BY seq").fetchall()
        assert len(rows) == 2 * turns
        conn.close()

    return Run(times, footprint(where), _timed(load))


def drive_fdatasync(where: Path, turns: int) -> Run:
    times = run_raw(where, turns, "t")
    log = where / "raw-t.log"
    return Run(times, footprint(where), _timed(log.read_bytes))


def _ours(where: Path, turns: int, *, streamed: bool) -> Run:
    home = where / "home"
    engine = open_engine(home, _answers(where / "answers.json", turns + 1), streamed=streamed)
    times, uid = [], None
    try:
        for i in range(turns):
            t0 = time.perf_counter()
            uid = engine.turn(uid, _text(i, "user"))
            times.append(time.perf_counter() - t0)
    finally:
        engine.close()
    size = footprint(home)
    assert uid is not None
    return Run(times, size, _timed(lambda: _read_back(home, uid, turns)))


def _read_back(home: Path, uid: str, turns: int) -> None:
    """A new engine reads every input and output of the conversation."""
    import agentsessions

    with agentsessions.open(home) as engine:
        kinds = [r.event.get("kind") for r in engine.read(uid)]
    assert kinds.count("EVENT_INPUT") == turns and kinds.count("EVENT_OUTPUT") == turns


def drive_ours(where: Path, turns: int) -> Run:
    return _ours(where, turns, streamed=False)


def drive_ours_streamed(where: Path, turns: int) -> Run:
    return _ours(where, turns, streamed=True)


def _serve(home: Path) -> tuple[subprocess.Popen[str], str]:
    """A local daemon on ``home`` (no tokens, loopback), and the address it listens on."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentsessions", "--home", str(home), "serve", "--no-auth",
         "--listen", "127.0.0.1:0", "--runtime", "local"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise SystemExit(f"serve did not start: {line!r}")
    return proc, line.rsplit(" ", 1)[-1].strip()


def drive_ours_grpc(where: Path, turns: int) -> Run:
    from agentsessions.client import dial

    home = where / "home"
    home.mkdir()
    model = _answers(where / "answers.json", turns + 1)
    proc, address = _serve(home)
    times: list[float] = []
    uid: str | None = None
    try:
        with dial(address) as engine:
            for i in range(turns):
                t0 = time.perf_counter()
                uid = engine.run(uid, [_text(i, "user")], harness="chat", model=model).uid
                times.append(time.perf_counter() - t0)
            assert uid is not None
            load = _timed(lambda: list(engine.read(uid)))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return Run(times, footprint(home), load)


def drive_ours_cli(where: Path, turns: int) -> Run:
    home = where / "home"
    model = _answers(where / "answers.json", turns + 1)
    cli = [sys.executable, "-m", "agentsessions", "--home", str(home)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times: list[float] = []
    uid = ""
    for i in range(turns):
        # the scripted model's place is per process: answer i is entry 1 of a one-answer file
        one = where / f"answer-{i}.json"
        one.write_text(json.dumps([_text(i, "assistant")]))
        argv = [*cli, "exec", *([uid] if uid else []), "--harness", "chat", "--model",
                f"scripted:file={one}", "--input", _text(i, "user"), "--json"]  # fmt: skip
        t0 = time.perf_counter()
        out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - t0)
        uid = uid or json.loads(out.stdout)["uid"]
        one.unlink()
    del model
    log = [*cli, "log", uid, "--json"]
    load = _timed(lambda: subprocess.run(log, env=env, capture_output=True, check=True))
    return Run(times, footprint(home), load)


def drive_eventsourcing(where: Path, turns: int) -> Run:
    """The eventsourcing library's SQLite persistence, one aggregate for the conversation."""
    app_class = _eventsourcing_app()
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(where / "es.db")}
    app = app_class(env=env)
    cid = app.start()
    times = []
    for i in range(turns):
        t0 = time.perf_counter()
        app.turn(cid, _text(i, "user"), _text(i, "assistant"))
        times.append(time.perf_counter() - t0)
    app.close()
    size = footprint(where)

    def load() -> None:
        again = app_class(env=env)
        assert len(again.repository.get(cid).messages) == 2 * turns
        again.close()

    return Run(times, size, _timed(load))


@functools.cache  # eventsourcing registers each aggregate class by topic: define it once
def _eventsourcing_app() -> Any:
    from eventsourcing.application import Application  # type: ignore[import-not-found]
    from eventsourcing.domain import Aggregate, event  # type: ignore[import-not-found]

    class Conversation(Aggregate):  # type: ignore[misc]
        @event("Started")  # type: ignore[untyped-decorator]
        def __init__(self) -> None:
            self.messages: list[tuple[str, str]] = []

        @event("Said")  # type: ignore[untyped-decorator]
        def say(self, role: str, text: str) -> None:
            self.messages.append((role, text))

    class Chat(Application):  # type: ignore[misc]
        def start(self) -> Any:
            conversation = Conversation()
            self.save(conversation)
            return conversation.id

        def turn(self, cid: Any, user: str, reply: str) -> None:
            conversation = self.repository.get(cid)
            conversation.say("user", user)
            conversation.say("assistant", reply)
            self.save(conversation)

    return Chat

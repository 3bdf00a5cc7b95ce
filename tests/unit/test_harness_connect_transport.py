"""The transport-only parts of Harness.Connect: streamed text and working state.

A harness served by ``agentsessions.wire.harnessnode`` streams text (``sink.delta``, as
``Event.delta``) and commits working state (``sink.state``, as ``Event.state_commit``
answered by ``ControllerFrame.state``) through the remote harness of
``agentsessions.wire.harnessclient``, driven by the Sessions engine: the deltas arrive as
the engine's DeltaFrames, the state becomes the session's working state (a STATE record
beside the journal, never an event), a lost compare-and-swap reaches the harness as
StateConflictError, and the turns replay with zero model calls.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentsessions
from agentsessions.controller.spi import HarnessDescriptor, Sink, Start
from agentsessions.errors import StateConflictError
from agentsessions.sessions.harnessbook import static_remotes
from agentsessions.sessions.values import DeltaFrame, SessionFrame
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.v1.construct import text_message
from agentsessions.wire.harnessnode import HarnessServer
from tests.probe_harness import ProbeHarness


def _socket(tag: str) -> str:
    return f"unix://{tempfile.mkdtemp(prefix='ash-', dir='/tmp')}/{tag}.sock"


@pytest.fixture
def served() -> Iterator[Any]:
    """Serve a factory over the wire under a remote name; stop the servers after."""
    servers: list[HarnessServer] = []

    def serve(name: str, factory: Any) -> str:
        server = HarnessServer(factory, _socket(name))
        servers.append(server)
        static_remotes([f"{name}={server.address}"])
        return name

    yield serve
    for server in servers:
        server.stop(0)


def _kinds(engine: Any, uid: str) -> list[str]:
    return [str(r.event["kind"]).removeprefix("EVENT_") for r in engine.read(uid)]


def test_a_remote_harness_streams_its_deltas_as_an_in_process_one(
    tmp_path: Path, served: Any
) -> None:
    name = served("r-probe", ProbeHarness)
    with agentsessions.open(tmp_path / "home", runtime="local") as engine:
        frames = list(engine.exec(harness=name, inputs=["stream"]))
        deltas = [f.text for f in frames if isinstance(f, DeltaFrame)]
        # deltas a slow consumer has not taken yet join one frame (turnstream.py): the text
        # arrives whole and in order, in one frame or two, however the threads are scheduled
        assert "".join(deltas) == "stream" and 1 <= len(deltas) <= 2
        assert isinstance(frames[0], SessionFrame) and isinstance(frames[-1], SessionFrame)
        uid = frames[0].session.uid
        assert "DELTA" not in _kinds(engine, uid)  # transport only: never journaled
        report = engine.rerun(uid)
        assert report.identical and report.model_calls == 0


def test_a_remote_memory_harness_commits_its_state_and_a_fresh_one_continues(
    tmp_path: Path, served: Any
) -> None:
    name = served("r-memory", HARNESSES.factory("memory"))
    home = tmp_path / "home"
    with agentsessions.open(home, runtime="remote") as engine:
        first = engine.run(harness=name, inputs=["remember blue"])
        uid = first.session.uid
        second = engine.run(uid, ["what"]).turn
        assert second is not None and second.outputs == ("turn 2: I remember blue",)
        assert engine.get(uid).state_version == 2
        assert "STATE" not in " ".join(_kinds(engine, uid))
    with agentsessions.open(home, runtime="remote") as engine:  # a fresh engine
        third = engine.run(uid, ["what now"]).turn
        assert third is not None and third.outputs == ("turn 3: I remember blue",)
        report = engine.rerun(uid)
        assert report.identical and report.model_calls == 0


class Stale:
    """Commits with a stale expected version, then says what the host answered."""

    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(id="stale", version="1")

    def run(self, start: Start, sink: Sink) -> None:
        sink.state(b"one", expected_version=start.state.version)
        try:
            sink.state(b"two", expected_version=start.state.version)  # stale now
        except StateConflictError as exc:
            text = f"conflict at version {exc.state_version}"
        else:
            text = "no conflict"
        sink.output(dict(text_message("assistant", text)))


def test_a_lost_state_cas_reaches_the_remote_harness_as_state_conflict(
    tmp_path: Path, served: Any
) -> None:
    name = served("r-stale", Stale)
    with agentsessions.open(tmp_path / "home", runtime="local") as engine:
        turn = engine.run(harness=name, inputs=["go"])
        assert turn.turn is not None and turn.turn.outputs == ("conflict at version 1",)
        assert engine.get(turn.session.uid).state_version == 1  # the refused one wrote nothing

"""A model for a harness that calls none is refused before anything is written.

The shipped harnesses declare ``Capabilities.uses_session_model`` (chat True; echo, counter
and memory False); the engine (the one home of session semantics, so the library, the CLI
and gRPC alike) refuses a request that names a model for a False harness with
InvalidArgumentError (exit 2), naming the harnesses that do. An undeclared harness (None) is
let through; the declaration travels on the Harness wire and the warm host's wire.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from needs import need

import agentsessions
from agentsessions.controller.spi import Capabilities, HarnessDescriptor
from agentsessions.errors import InvalidArgumentError
from agentsessions.sessions.wiring import HARNESSES

MODEL = "scripted:seed=1"


@pytest.mark.parametrize(
    ("name", "uses"), [("chat", True), ("echo", False), ("counter", False), ("memory", False)]
)
def test_the_shipped_harnesses_declare_whether_they_call_the_session_model(
    name: str, uses: bool
) -> None:
    assert HARNESSES.create(name).describe().capabilities.uses_session_model is uses


def test_a_model_for_a_harness_that_calls_none_is_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    with agentsessions.open(tmp_path, runtime="local") as engine:
        with pytest.raises(InvalidArgumentError) as info:
            list(engine.exec(None, ["hi"], model=MODEL))  # the default harness: echo
        assert "harness 'echo' calls no model" in info.value.message
        assert "harnesses that call it: chat" in info.value.message
        assert info.value.exit_code == 2 and info.value.grpc_code == "INVALID_ARGUMENT"
        assert engine.list().sessions == ()
        # an existing echo session: the same, and its journal is unchanged
        uid = engine.run(None, ["hi"]).uid
        before = engine.get(uid).last_seq
        with pytest.raises(InvalidArgumentError, match="calls no model"):
            engine.run(uid, ["again"], model=MODEL)
        assert engine.get(uid).last_seq == before
        # the fixed model echo does call, and no model at all, are fine
        engine.run(uid, ["again"], model="echo")
        engine.run(uid, ["and again"])
        # a harness that calls the session's model takes it
        assert engine.run(None, ["hi"], harness="chat", model=MODEL).turn is not None


def test_create_refuses_a_model_only_with_a_harness_that_calls_none(tmp_path: Path) -> None:
    with agentsessions.open(tmp_path, runtime="local") as engine:
        with pytest.raises(InvalidArgumentError, match="harness 'memory' calls no model"):
            engine.create(harness="memory", model=MODEL)
        # no harness yet: a turn may run it with one that calls the model
        uid = engine.create(model=MODEL).uid
        assert engine.run(uid, ["hi"], harness="chat").turn is not None


def test_an_undeclared_harness_is_let_through(tmp_path: Path) -> None:
    from harnesses.chat import ChatHarness

    class Undeclared(ChatHarness):
        def describe(self) -> HarnessDescriptor:
            return HarnessDescriptor(id="undeclared", version="1", capabilities=Capabilities())

    HARNESSES.register("undeclared", Undeclared)
    try:
        with agentsessions.open(tmp_path, runtime="local") as engine:
            assert engine.run(None, ["hi"], harness="undeclared", model=MODEL).turn is not None
    finally:
        HARNESSES.unregister("undeclared")


@pytest.mark.parametrize("uses", [True, False, None])
def test_the_declaration_travels_on_the_wires(uses: bool | None) -> None:
    from agentsessions.runtimes import warm_wire

    descriptor = HarnessDescriptor(id="h", capabilities=Capabilities(uses_session_model=uses))
    assert warm_wire.descriptor_from_wire(warm_wire.descriptor_to_wire(descriptor)) == descriptor
    grpc_wire = need("agentsessions.wire.harnesswire", "grpc")
    back = grpc_wire.descriptor_from_proto(grpc_wire.descriptor_to_proto(descriptor))
    assert back.capabilities.uses_session_model is uses

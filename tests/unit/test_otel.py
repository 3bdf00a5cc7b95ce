"""OpenTelemetry traces and metrics (the ``otel`` extra), read back with the SDK's in-memory
exporter and reader: a span per RPC and per turn, child spans for model calls (GenAI
semantic conventions), tool calls and commits; counters and histograms for turns, commits,
fsync latency and open streams. And the rule that turns it on (the OTEL_* variables), and
that nothing of OpenTelemetry is imported without it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from needs import need

need("opentelemetry.sdk", "otel")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import agentsessions.telemetry as telemetry
from agentsessions.controller.controller import Controller
from agentsessions.controller.counting import CountingModels
from agentsessions.controller.spi import BoundTool, Completion, ModelRequest
from agentsessions.errors import InvalidArgumentError
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.runtimes import create_runtime
from agentsessions.server.otel import OtelTelemetry
from agentsessions.server.telemetryenv import from_environment, wanted
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.tools import AppendLine, static_resolver
from agentsessions.v1 import construct
from tests.tool_harness import ToolLineHarness, line_call, plan

ROOT = Path(__file__).resolve().parents[2]
HARNESSES.register("tool-line", ToolLineHarness)


@dataclass
class Otel:
    telemetry: OtelTelemetry
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.finished() if s.name == name]

    def points(self, metric: str) -> list[Any]:
        data = self.metrics.get_metrics_data()
        assert data is not None
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for m in scope.metrics
            if m.name == metric
            for point in m.data.data_points
        ]


@pytest.fixture
def otel() -> Iterator[Otel]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    installed = OtelTelemetry(tracer_provider, MeterProvider(metric_readers=[reader]))
    previous = telemetry.install(installed)
    try:
        yield Otel(installed, spans, reader)
    finally:
        telemetry.install(previous)
        installed.shutdown()


def _say(text: str) -> list[dict[str, Any]]:
    return [dict(construct.text_message("user", text))]


def _models(name: str) -> Any:
    from agentsessions.models import create_model

    return create_model(name)


def test_a_turn_is_a_span_with_its_tool_calls_and_commits_under_it(
    otel: Otel, tmp_path: Path
) -> None:
    store = FileStore(tmp_path / "home")
    bound = {"append": BoundTool("append", AppendLine(), {"path": str(tmp_path / "fx.txt")})}
    ctl = Controller(
        store,
        harnesses=HARNESSES,
        models=_models,
        runtime=create_runtime("local", home=tmp_path),
        tools=static_resolver(bound),
        keep_writers=0,
    )
    uid = str(store.create(SessionMeta(uid=new_uid(), harness="tool-line")).uid)
    ctl.exec(uid, _say("go"), config=plan(line_call("c1", "hello")))

    (turn,) = otel.named("agentsessions.turn")
    assert turn.attributes is not None and turn.context is not None
    assert turn.attributes["agentsessions.session"] == uid
    assert turn.attributes["agentsessions.turn.outcome"] == "completed"
    (tool,) = otel.named("execute_tool append")
    assert tool.parent is not None and tool.parent.span_id == turn.context.span_id
    assert dict(tool.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "append",
        "gen_ai.tool.call.id": "c1",
        "agentsessions.tool.failed": False,
    }
    commits = otel.named("agentsessions.commit")
    assert len(commits) >= 3  # START+INPUT, TOOL_CALL, ..., END
    assert all(c.parent is not None and c.parent.span_id == turn.context.span_id for c in commits)
    (turns,) = otel.points("agentsessions.turns")
    assert (turns.value, dict(turns.attributes)) == (1, {"outcome": "completed"})
    (committed,) = otel.points("agentsessions.commits")
    assert committed.value == len(commits)
    (fsync,) = otel.points("agentsessions.fsync.duration")
    assert fsync.count >= 2 and fsync.sum >= 0  # the file store synced the turn's commits


@dataclass
class Answering:
    """A model provider that reports usage as proto3-JSON does (int64 as a string)."""

    def complete(
        self, request: ModelRequest, on_delta: Callable[[str], None] | None = None
    ) -> Completion:
        message = dict(construct.text_message("assistant", "ok"))
        return Completion(message, {"input_tokens": "12", "output_tokens": 3})


def test_a_model_call_is_a_genai_client_span_with_its_tokens(otel: Otel) -> None:
    models = CountingModels(lambda name: Answering())
    request = ModelRequest(model="acme:big-1,base_url=https://secret.example/v1", messages=[])
    models(request.model).complete(request)
    (span,) = otel.finished()
    assert span.name == "chat big-1" and span.kind.name == "CLIENT"
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "acme",
        "gen_ai.request.model": "big-1",  # never the spec's options (a URL)
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 3,
    }
    usage = {
        p.attributes["gen_ai.token.type"]: p.sum for p in otel.points("gen_ai.client.token.usage")
    }
    assert usage == {"input": 12, "output": 3}
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.count == 1


def test_an_rpc_span_continues_the_callers_trace_and_parents_the_turn(
    otel: Otel, tmp_path: Path
) -> None:
    import grpc

    import agentsessions
    from agentsessions.server.app import build_server
    from agentsessions.server.auth import server_security
    from agentsessions.wire import convert
    from agentsessions.wire.gen import session_pb2, session_pb2_grpc

    trace_id = "0af7651916cd43dd8448eb211c80319c"
    with agentsessions.open(tmp_path / "home", runtime="local") as engine:
        home = tmp_path / "home"
        _, interceptors, scope = server_security(
            home, listen="127.0.0.1:0", engine=engine, no_auth=True
        )
        server = build_server(engine, "127.0.0.1:0", interceptors=interceptors, scope=scope)
        try:
            with grpc.insecure_channel(server.address) as channel:
                stub: Any = session_pb2_grpc.SessionsStub(channel)  # type: ignore[no-untyped-call]
                request = session_pb2.ExecRequest()
                request.inputs.add().CopyFrom(
                    convert.message_to_proto(construct.text_message("user", "hi"))
                )
                parent = f"00-{trace_id}-b7ad6b7169203331-01"
                list(stub.Exec(request, metadata=[("traceparent", parent)]))
        finally:
            server.stop(None)  # the call has ended: its span too
    (rpc,) = otel.named("agentsessions.v1.Sessions/Exec")
    assert rpc.kind.name == "SERVER" and rpc.context is not None
    assert f"{rpc.context.trace_id:032x}" == trace_id
    assert rpc.attributes is not None and rpc.attributes["rpc.grpc.status_code"] == 0
    (turn,) = otel.named("agentsessions.turn")  # run on the engine's thread, under the call
    assert turn.parent is not None and turn.parent.span_id == rpc.context.span_id
    (chat,) = [s for s in otel.finished() if s.name.startswith("chat ")]
    assert chat.parent is not None and turn.context is not None
    assert chat.parent.span_id == turn.context.span_id
    (streams,) = otel.points("agentsessions.streams.open")
    assert streams.value == 0  # opened, then closed
    assert otel.points("rpc.server.call.duration")


# -- the rule that turns it on ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("env", "on"),
    [
        ({}, False),
        ({"OTEL_SERVICE_NAME": "x"}, False),
        ({"OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": " , none"}, False),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_METRICS_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}, False),
    ],
)
def test_the_otel_variables_turn_it_on(env: dict[str, str], on: bool) -> None:
    assert wanted(env) is on


def test_an_exporter_by_name_and_an_unknown_one_refused() -> None:
    found = from_environment({"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "none"})
    assert isinstance(found, OtelTelemetry)
    found.shutdown()
    assert from_environment({}) is None
    with pytest.raises(InvalidArgumentError, match="OTEL_TRACES_EXPORTER=nosuch"):
        from_environment({"OTEL_TRACES_EXPORTER": "nosuch"})


def test_nothing_of_opentelemetry_is_imported_unless_asked(tmp_path: Path) -> None:
    script = f"""
import sys
import agentsessions
from agentsessions.server.app import build_server
from agentsessions.server.auth import server_security
from agentsessions.server.telemetryenv import observe
stop = observe("json", print)
with agentsessions.open({str(tmp_path)!r}, runtime="local") as engine:
    _, inter, scope = server_security({str(tmp_path)!r}, listen="127.0.0.1:0", engine=engine,
                                      no_auth=True)
    server = build_server(engine, "127.0.0.1:0", interceptors=inter, scope=scope)
    engine.create(project="default")
    server.stop(None)
stop()
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"

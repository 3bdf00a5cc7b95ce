"""A counting harness that keeps its count in memory, with a fake Sink and History.

Importable as ``counting_harness:create`` by a warm host process (the tests pass their
``sys.path`` on). Each run counts one and outputs ``count:N``; an input text chooses
extra behaviour: ``fail`` raises, ``model`` asks the sink's model, ``history`` reads the
history (length, tail, full iteration), ``stream`` sends deltas and usage.

Run as ``python -m counting_harness HOME SESSION [TEXT]`` (with this directory on the
path) it is a separate client process: it attaches to the session's warm compute, runs
once and prints the outputs as JSON.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentsessions.controller.spi import (
    REQUIRES_MEMORY_SNAPSHOT,
    Capabilities,
    Completion,
    Event,
    HarnessDescriptor,
    Message,
    ModelRequest,
    Start,
)

DESCRIPTOR = HarnessDescriptor(
    id="counting",
    version="1",
    capabilities=Capabilities(resumability=REQUIRES_MEMORY_SNAPSHOT),
)


def text_message(role: str, text: str) -> Message:
    """A message with one text part (the journal's Message form)."""
    return {"role": role, "parts": [{"text": {"text": text}}]}


def text_of(message: Message) -> str:
    """The concatenated text parts of ``message``."""
    return "".join(part.get("text", {}).get("text", "") for part in message.get("parts", []))


class CountingHarness:
    """Counts runs in memory: the count survives only if the process memory does."""

    def __init__(self) -> None:
        self.count = 0

    def describe(self) -> HarnessDescriptor:
        return DESCRIPTOR

    def run(self, start: Start, sink: Any) -> None:
        texts = [text_of(message) for message in start.inputs]
        if "fail" in texts:
            raise ValueError(f"boom at count {self.count}")
        self.count += 1
        if "model" in texts:
            request = ModelRequest(model="fake", messages=start.inputs, params={"t": "0"})
            completion = sink.model(request)
            sink.output(text_message("assistant", "model said " + text_of(completion.message)))
        if "history" in texts:
            tail = start.history.tail(2)
            every = list(start.history)
            summary = f"history:{len(start.history)}:{[e['seq'] for e in tail]}:{len(every)}"
            sink.output(text_message("assistant", summary))
        if "stream" in texts:
            sink.delta("cou")
            sink.delta("nting")
            sink.usage({"input_tokens": "3", "output_tokens": "1"})
        if "config" in texts:
            sink.output(text_message("assistant", "config:" + start.config.hex()))
        sink.output(text_message("assistant", f"count:{self.count}"))


def create() -> CountingHarness:
    """The harness factory (``counting_harness:create``)."""
    return CountingHarness()


def broken() -> CountingHarness:
    """A factory that fails (``counting_harness:broken``)."""
    raise RuntimeError("no harness today")


class ListHistory:
    """A History over a list of events."""

    def __init__(self, events: list[Event] | None = None) -> None:
        self.events = list(events or [])

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def tail(self, count: int) -> list[Event]:
        return self.events[-count:] if count > 0 else []


class FakeSink:
    """Records every effect; ``fail_output`` makes ``output`` raise it."""

    def __init__(self, fail_output: Exception | None = None) -> None:
        self.outputs: list[str] = []
        self.requests: list[ModelRequest] = []
        self.reports: list[dict[str, Any]] = []
        self.usages: list[dict[str, Any]] = []
        self.deltas: list[str] = []
        self.fail_output = fail_output

    def model(self, request: ModelRequest) -> Completion:
        self.requests.append(request)
        return Completion(message=text_message("assistant", "hi"), usage={"input_tokens": "1"})

    def output(self, message: Message) -> None:
        if self.fail_output is not None:
            raise self.fail_output
        self.outputs.append(text_of(message))

    def report(self, result: dict[str, Any]) -> None:
        self.reports.append(result)

    def usage(self, usage: dict[str, Any]) -> None:
        self.usages.append(usage)

    def delta(self, text: str) -> None:
        self.deltas.append(text)


def start(*texts: str, history: ListHistory | None = None, config: bytes = b"") -> Start:
    """A Start with one user input per text."""
    return Start(
        execution_id="e1",
        config=config,
        inputs=tuple(text_message("user", t) for t in texts),
        history=history if history is not None else ListHistory(),
    )


def main(argv: list[str]) -> int:
    """A separate client process: attach to (or restore) the session's compute, run once.

    ``HOME SESSION [--restore warm:<id>] [TEXT...]``: only strings cross the boundary.
    """
    from agentsessions.controller.spi import SnapshotRef
    from agentsessions.runtimes.refs import FactoryRef
    from agentsessions.runtimes.warm import WarmRuntime

    home, session, *texts = argv
    runtime = WarmRuntime(Path(home), idle_seconds=120)
    if texts[:1] == ["--restore"]:
        ref = SnapshotRef(local=texts[1], memory=True)
        texts = texts[2:]
        compute = runtime.restore(session, ref)
    else:
        compute = runtime.create(session, FactoryRef("counting_harness:create"))
    sink = FakeSink()
    compute.harness.run(start(*texts), sink)
    print(json.dumps({"pid": compute.pid, "outputs": sink.outputs}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

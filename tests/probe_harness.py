"""Harnesses for the Runtime contract suite, importable by name by a warm host process.

``probe_harness:create`` is a STATELESS_REPLAY harness whose effects depend only on its
Start (inputs, history, config), so every runtime must produce exactly the effects a direct
in-process run produces. ``probe_harness:create_memory`` is the same harness marked
REQUIRES_MEMORY_SNAPSHOT that also outputs ``count:N``, a count kept only in its memory.

Each input text selects an effect: ``model`` asks the sink's model, ``stream`` sends two
deltas and a usage, ``report`` reports a tool result, ``history`` reads the history (length,
tail, full iteration), ``config`` outputs the config, ``fail`` raises ValueError; every
input then outputs ``probe:<text>``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agentsessions.controller.spi import (
    REQUIRES_MEMORY_SNAPSHOT,
    Capabilities,
    Completion,
    Event,
    HarnessDescriptor,
    Message,
    ModelRequest,
    Sink,
    Start,
)

STATELESS = HarnessDescriptor(id="probe", version="1")
MEMORY = HarnessDescriptor(
    id="memprobe", version="1", capabilities=Capabilities(resumability=REQUIRES_MEMORY_SNAPSHOT)
)
FAILURE = "probe failed on purpose"


def text_message(role: str, text: str) -> Message:
    """A message with one text part."""
    return {"role": role, "parts": [{"text": {"text": text}}]}


def text_of(message: Message) -> str:
    """The concatenated text parts of ``message``."""
    return "".join(part.get("text", {}).get("text", "") for part in message.get("parts", []))


class ProbeHarness:
    """Effects from its Start alone; ``count`` is memory the stateless form never shows."""

    descriptor = STATELESS

    def __init__(self) -> None:
        self.count = 0

    def describe(self) -> HarnessDescriptor:
        return self.descriptor

    def run(self, start: Start, sink: Sink) -> None:
        for message in start.inputs:
            self._one(text_of(message), message, start, sink)
        self.count += 1
        if self.descriptor is MEMORY:
            sink.output(text_message("assistant", f"count:{self.count}"))

    def _one(self, text: str, message: Message, start: Start, sink: Sink) -> None:
        if text == "fail":
            raise ValueError(FAILURE)
        if text == "model":
            completion = sink.model(ModelRequest(model="", messages=(message,)))
            sink.output(text_message("assistant", "model said " + text_of(completion.message)))
        elif text == "stream":
            sink.delta("str")
            sink.delta("eam")
            sink.usage({"input_tokens": "3", "output_tokens": "1"})
        elif text == "report":
            sink.report({"call_id": "c1", "name": "probe", "output": "done"})
        elif text == "history":
            tail = [event["seq"] for event in start.history.tail(2)]
            every = len(list(start.history))
            sink.output(text_message("assistant", f"history:{len(start.history)}:{tail}:{every}"))
        elif text == "config":
            sink.output(text_message("assistant", "config:" + start.config.hex()))
        sink.output(text_message("assistant", f"probe:{text}"))


class MemoryProbeHarness(ProbeHarness):
    """The probe whose state is its memory."""

    descriptor = MEMORY


def create() -> ProbeHarness:
    """The stateless probe (``probe_harness:create``)."""
    return ProbeHarness()


def create_memory() -> MemoryProbeHarness:
    """The memory probe (``probe_harness:create_memory``)."""
    return MemoryProbeHarness()


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


class RecordingSink:
    """Records every effect in order as ``(kind, payload)``; ``fail_output`` raises it."""

    def __init__(self, fail_output: Exception | None = None) -> None:
        self.effects: list[tuple[str, Any]] = []
        self.fail_output = fail_output

    def model(self, request: ModelRequest) -> Completion:
        self.effects.append(("model", [text_of(m) for m in request.messages]))
        return Completion(message=text_message("assistant", "hi"), usage={"input_tokens": "1"})

    def output(self, message: Message) -> None:
        if self.fail_output is not None:
            raise self.fail_output
        self.effects.append(("output", text_of(message)))

    def report(self, result: dict[str, Any]) -> None:
        self.effects.append(("report", result))

    def usage(self, usage: dict[str, Any]) -> None:
        self.effects.append(("usage", usage))

    def delta(self, text: str) -> None:
        self.effects.append(("delta", text))

    def outputs(self) -> list[str]:
        """The output texts only."""
        return [payload for kind, payload in self.effects if kind == "output"]


def start(*texts: str, history: ListHistory | None = None, config: bytes = b"") -> Start:
    """A Start with one user input per text."""
    return Start(
        execution_id="e1",
        config=config,
        inputs=tuple(text_message("user", t) for t in texts),
        history=history if history is not None else ListHistory(),
    )

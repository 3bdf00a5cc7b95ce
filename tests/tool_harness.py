"""A tests-only harness that makes mediated tool calls through ``sink.tool``.

Its config is JSON: ``{"calls": [{"id", "tool", "key", "args", "mediation"?}, ...]}``; it
hands each call to the host in order, then outputs one line per result
(``<id>: ok <output>`` or ``<id>: error <text>``), so a turn's answer shows what the model
would have seen. Registered by the tests that use it (``HARNESSES.register("tool-line",
ToolLineHarness)``).
"""

from __future__ import annotations

import json
from typing import Any

from agentsessions.controller.spi import HarnessDescriptor, Sink, Start

MEDIATED = "MEDIATION_CONTROLLER_MEDIATED"


class ToolLineHarness:
    """Runs the calls its config lists, then answers with their results."""

    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(id="tool-line", version="1")

    def run(self, start: Start, sink: Sink) -> None:
        plan = json.loads(start.config.decode() or "{}")
        lines = []
        for spec in plan.get("calls", []):
            call: dict[str, Any] = {
                "id": spec.get("id", ""),
                "tool": spec.get("tool", "append"),
                "args": spec.get("args", {}),
                "mediation": spec.get("mediation", MEDIATED),
            }
            if spec.get("key"):
                call["idempotency_key"] = spec["key"]
            result = sink.tool(call)
            if result.get("is_error"):
                lines.append(f"{call['id']}: error {result.get('error', '')}")
            else:
                output = json.dumps(result.get("output", {}), sort_keys=True)
                lines.append(f"{call['id']}: ok {output}")
        sink.output({"role": "assistant", "parts": [{"text": {"text": "\n".join(lines)}}]})


def plan(*calls: dict[str, Any]) -> bytes:
    """The harness config for ``calls``."""
    return json.dumps({"calls": list(calls)}).encode()


def line_call(call_id: str, line: str, key: str = "", tool: str = "append") -> dict[str, Any]:
    """One append_line call (key defaults to ``k-<id>``)."""
    return {"id": call_id, "tool": tool, "key": key or f"k-{call_id}", "args": {"line": line}}

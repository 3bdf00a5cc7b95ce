"""Tool-call benchmark: a mediated call's cost over the bare executor call, same run.

    python bench/tools.py            # 200 calls per measurement
    python bench/tools.py --quick    # 20, for a smoke check

The executor is the built-in ``append_line`` (one durable append per call) on a real
FileStore with real syncs, so both sides pay the effect's own fsync:

- bare: ``AppendLine().call(request)``, the executor alone;
- mediated: one turn whose harness hands the calls to ``sink.tool`` (TOOL_CALL synced before
  the executor, the host's receipt kept durably, TOOL_RESULT riding with the next sync),
  minus the same turn with no calls, per call;
- chat loop: the chat harness with the scripted model asking for one call per model call
  (two model calls per round trip), per call, against the bare call.

Ratios are printed; no number here is asserted by a test.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentsessions.controller.spi import HarnessDescriptor, Sink, Start, ToolRequest
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.sessions.local import open_local
from agentsessions.sessions.wiring import HARNESSES, build_controller
from agentsessions.tools import AppendLine, static_resolver
from agentsessions.tools.workload import parse_workload
from agentsessions.v1 import construct

REPEATS = 3


class CallsHarness:
    """Makes ``int(config)`` mediated append_line calls, then one output."""

    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(id="bench-tools", version="1")

    def run(self, start: Start, sink: Sink) -> None:
        for n in range(int(start.config.decode() or "0")):
            call = {
                "id": f"c{n}",
                "tool": "append_line",
                "args": {"line": f"line {n}"},
                "mediation": "MEDIATION_CONTROLLER_MEDIATED",
                "idempotency_key": f"{start.execution_id}:{n}",
            }
            sink.tool(call)
        sink.output(dict(construct.text_message("assistant", "done")))


HARNESSES.register("bench-tools", CallsHarness)


def _best(samples: list[float]) -> float:
    return min(samples) if samples else float("nan")


def bench_bare(tmp: Path, calls: int) -> float:
    """Seconds per bare executor call."""
    executor, samples = AppendLine(), []
    for r in range(REPEATS):
        path = tmp / f"bare-{r}.txt"
        start = time.perf_counter()
        for n in range(calls):
            request = ToolRequest(
                "s", f"c{n}", "append_line", {"line": "x"}, f"k{n}", {"path": str(path)}
            )
            executor.call(request)
        samples.append((time.perf_counter() - start) / calls)
    return _best(samples)


def bench_mediated(tmp: Path, calls: int) -> float:
    """Seconds per mediated call: a turn with ``calls`` calls minus one with none."""
    store = FileStore(tmp / "mediated")
    bound = {"append_line": _bound(tmp / "mediated.txt")}
    per_call = []
    for _ in range(REPEATS):
        times = {}
        for count in (0, calls):
            controller = build_controller(store, tmp, runtime="local")
            controller.tools = static_resolver(bound)
            uid = store.create(SessionMeta(uid=new_uid(), harness="bench-tools")).uid
            start = time.perf_counter()
            controller.exec(
                uid, [dict(construct.text_message("user", "go"))], config=str(count).encode()
            )
            times[count] = time.perf_counter() - start
            controller.close()
        per_call.append((times[calls] - times[0]) / calls)
    return _best(per_call)


def _bound(path: Path) -> Any:
    from agentsessions.controller.spi import BoundTool

    return BoundTool("append_line", AppendLine(), {"path": str(path)})


def bench_chat(tmp: Path, calls: int) -> float:
    """Seconds per tool round trip of the chat harness (a model call asking, the call, and
    the answer's model call amortised over ``calls`` rounds)."""
    toml = tmp / "tools.toml"
    effects = tmp / "chat.txt"
    toml.write_text(
        '[tools.append_line]\nmediation = "mediated"\nexecutor = "append_line"\n'
        f"config = {{ path = {json.dumps(str(effects))} }}\n"
    )
    parse_workload(toml.read_text())  # a bad workload fails here, not in the timing
    ask = {"tool_calls": [{"name": "append_line", "arguments": {"line": "x"}}]}
    script = tmp / "script.json"
    script.write_text(json.dumps([ask] * calls + ["done"]))
    samples = []
    for r in range(REPEATS):
        with open_local(tmp / f"chat-{r}") as engine:
            start = time.perf_counter()
            engine.run(
                None,
                ["go"],
                harness="chat",
                model=f"scripted:file={script}",
                tools=toml,
                config=json.dumps({"max_steps": calls + 1}).encode(),
            )
            samples.append((time.perf_counter() - start) / calls)
    return _best(samples)


def main() -> None:
    """Run the benchmarks and print their ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke check")
    calls = 20 if parser.parse_args().quick else 200
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        bare = bench_bare(tmp, calls)
        mediated = bench_mediated(tmp, calls)
        chat = bench_chat(tmp, calls)
    print(f"tool calls: {calls} per measurement, best of {REPEATS}")
    print(f"  bare executor call      {bare * 1e3:8.3f} ms")
    print(f"  mediated (sink.tool)    {mediated * 1e3:8.3f} ms   {mediated / bare:6.2f}x bare")
    print(f"  chat loop round trip    {chat * 1e3:8.3f} ms   {chat / bare:6.2f}x bare")


if __name__ == "__main__":
    main()

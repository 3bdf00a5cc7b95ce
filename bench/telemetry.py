"""What telemetry costs a turn: ratios against the no-op default, measured in the same run.

    python bench/telemetry.py            # 400 turns per round, 5 rounds
    python bench/telemetry.py --quick    # a smoke check

Each round runs echo turns on one held session of a file store (fsync on) three ways,
interleaved: the no-op telemetry (the default: what every turn pays for the seam), a
telemetry whose every method is a Python call that does nothing (the seam's calls at their
cheapest), and OpenTelemetry's SDK with every span and metric recorded in memory (the
``otel`` extra, on). Printed: the median per-turn time of each, and each as a ratio of the
default. No number here is asserted by a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agentsessions.telemetry as telemetry
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.sessions.wiring import build_controller
from agentsessions.v1 import construct


class Calls(telemetry.Telemetry):
    """Enabled, and every report a call that does nothing."""

    enabled = True

    def fsync(self, seconds: float) -> None:
        pass


def _otel() -> telemetry.Telemetry | None:
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )
    except ImportError:
        return None
    from agentsessions.server.otel import OtelTelemetry

    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    return OtelTelemetry(tracer, MeterProvider(metric_readers=[InMemoryMetricReader()]))


def per_turn(ctl: Any, uid: str, turns: int, installed: telemetry.Telemetry) -> float:
    previous = telemetry.install(installed)
    try:
        began = time.perf_counter()
        for i in range(turns):
            ctl.exec(uid, [dict(construct.text_message("user", f"t{i}"))])
        return (time.perf_counter() - began) / turns
    finally:
        telemetry.install(previous)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    turns, rounds = (50, 2) if args.quick else (400, 5)
    kinds: dict[str, telemetry.Telemetry] = {"no-op (default)": telemetry.NULL, "calls": Calls()}
    otel = _otel()
    if otel is not None:
        kinds["opentelemetry sdk"] = otel
    times: dict[str, list[float]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        store = FileStore(Path(tmp))
        ctl = build_controller(store, Path(tmp), runtime="local")
        uid = store.create(SessionMeta(uid=new_uid(), harness="echo")).uid
        per_turn(ctl, uid, turns // 5, telemetry.NULL)  # warm up: the writer is held after
        for _ in range(rounds):
            for name, installed in kinds.items():
                times[name].append(per_turn(ctl, uid, turns, installed))
        ctl.close()
    base = statistics.median(times["no-op (default)"])
    print(f"{turns} echo turns x {rounds} rounds, file store (fsync on), one held session")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:18} {median * 1e6:8.0f} us/turn   {median / base:5.2f}x the default")
    if otel is None:
        print("  (opentelemetry-sdk not installed: pip install 'agentsessions[otel]')")


if __name__ == "__main__":
    main()

"""Compaction benchmark: a compacted turn against an uncompacted one on a long session.

    python bench/compact.py            # a 2,000-turn chat session
    python bench/compact.py --quick    # 100 turns, for a smoke check

One chat session (a real FileStore with real syncs) is built turn by turn with a model that
answers at once and counts what it is sent. Keeping the whole context without compaction
means a history window larger than the session (``history_events`` 10**9): the uncompacted
turn reads and sends the whole conversation. Then ``compact --keep-turns 2`` runs, and the
compacted turn (the default window of 50 events, which holds the marker) sends the summary
and what follows it: it reads and sends the same amount at 100 and at 2,000 turns. Printed:
wall time per turn (best of a few), request bytes and messages, and their ratios; the
compaction's own cost once. No number here is asserted by a test.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentsessions.controller.spi import Completion, ModelRequest
from agentsessions.models import MODELS
from agentsessions.sessions.local import LocalSessions, open_local
from agentsessions.v1 import construct

REPEATS = 5
WIDE = json.dumps({"history_events": 10**9}).encode()


class SizingModel:
    """Answers ``ok:<n>`` at once and keeps the size of the last request it got."""

    last_bytes = 0
    last_messages = 0

    def complete(self, request: ModelRequest, on_delta: Callable[[str], None] | None = None) -> Any:
        SizingModel.last_bytes = len(json.dumps(request.messages, separators=(",", ":")))
        SizingModel.last_messages = len(request.messages)
        text = f"ok:{SizingModel.last_messages}"
        return Completion(dict(construct.text_message("assistant", text)))


def build(engine: LocalSessions, turns: int) -> str:
    """A chat session of ``turns`` ordinary turns (the default window while building)."""
    uid = engine.run(None, ["turn 0: hello"], harness="chat", model="bench-sizing").uid
    for i in range(1, turns):
        engine.run(uid, [f"turn {i}: tell me a little more about item {i}"])
    return uid


def measure(engine: LocalSessions, uid: str, config: bytes) -> tuple[float, int, int]:
    """Best seconds per turn with ``config``, and the last request's bytes and messages."""
    samples = []
    for r in range(REPEATS):
        start = time.perf_counter()
        engine.run(uid, [f"measured question {r}"], config=config)
        samples.append(time.perf_counter() - start)
    return min(samples), SizingModel.last_bytes, SizingModel.last_messages


def main() -> None:
    """Build the session, measure before and after compaction, print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke check")
    turns = 100 if parser.parse_args().quick else 2000
    MODELS.register("bench-sizing", SizingModel)
    with tempfile.TemporaryDirectory() as name, open_local(Path(name) / "home") as engine:
        started = time.perf_counter()
        uid = build(engine, turns)
        built = time.perf_counter() - started
        plain, plain_bytes, plain_msgs = measure(engine, uid, WIDE)
        started = time.perf_counter()
        engine.compact(uid, keep_turns=2)
        compacting = time.perf_counter() - started
        compacted, small_bytes, small_msgs = measure(engine, uid, b"")
    print(f"compaction: a {turns}-turn chat session (built in {built:.1f} s), best of {REPEATS}")
    print(f"  uncompacted turn  {plain * 1e3:9.3f} ms  {plain_bytes:>10,} B  {plain_msgs:>6} msgs")
    print(
        f"  compacted turn    {compacted * 1e3:9.3f} ms  {small_bytes:>10,} B  {small_msgs:>6} msgs"
        f"   {plain / compacted:6.2f}x faster, {plain_bytes / small_bytes:8.1f}x smaller"
    )
    print(f"  the compaction    {compacting * 1e3:9.3f} ms  (once: reads the whole history)")


if __name__ == "__main__":
    main()

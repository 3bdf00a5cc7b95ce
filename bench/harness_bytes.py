"""What crosses the wire in a remote chat turn: bytes per message, named messages or whole.

    python bench/harness_bytes.py              # 200 turns, the last 50 counted
    python bench/harness_bytes.py --pad 1000   # each input 1,000 characters longer

The chat harness with the echo model, on one session each of two nodes in this process: one
whose model calls name the messages of the history the host holds (``Event.message_seqs``,
as ``harness serve`` does), one sending every message whole (``named=False``, as a node did
before). Each message the host sends (its frames) and the node sends (its events) is
counted at the point it is handed to grpc, by kind, as the protobuf's serialized size; the
mean over the last 50 turns is printed, and a turn's total. Bytes only: the time a turn
takes is ``bench/harness_wire.py``'s.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402

import agentsessions  # noqa: E402
from agentsessions.sessions.harnessbook import static_remotes  # noqa: E402
from agentsessions.sessions.wiring import HARNESSES  # noqa: E402
from agentsessions.wire import harnesslinks  # noqa: E402
from agentsessions.wire.harnesslinks import LANES  # noqa: E402
from agentsessions.wire.harnessnode import HarnessServer  # noqa: E402
from agentsessions.wire.harnessoutbox import Outbox  # noqa: E402

COUNTED: dict[str, list[int]] = defaultdict(list)


def _counting() -> None:
    """Count each frame a host's lane sends and each event a node's outbox queues."""
    send = harnesslinks.Lane.send
    put = Outbox.put

    def counted_send(self: Any, frame: Any) -> None:
        COUNTED["host: " + str(frame.WhichOneof("frame"))].append(frame.ByteSize())
        send(self, frame)

    def counted_put(self: Any, event: Any) -> None:
        kind = msgspec.json.decode(event.json)["kind"] if event.json else event.WhichOneof("body")
        COUNTED[f"node: {kind}"].append(event.ByteSize())
        put(self, event)

    harnesslinks.Lane.send = counted_send  # type: ignore[method-assign]
    Outbox.put = counted_put  # type: ignore[method-assign]


def _session(harness: str, turns: int, pad: str) -> dict[str, float]:
    """Mean bytes per message kind over the last 50 of ``turns`` turns on ``harness``."""
    with agentsessions.open(tempfile.mkdtemp(), runtime="local") as engine:
        uid = engine.run(harness=harness, inputs=["warm up"]).uid
        for i in range(turns):
            if i == turns - 50:
                COUNTED.clear()
            engine.run(uid, [f"turn {i} {pad}"])
    return {kind: sum(sizes) / 50 for kind, sizes in sorted(COUNTED.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns (default 200; >= 50)")
    parser.add_argument("--pad", type=int, default=0, help="characters added to each input")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="ash-bytes-")
    named = HarnessServer(HARNESSES.factory("chat"), f"unix://{home}/named.sock")
    whole = HarnessServer(HARNESSES.factory("chat"), f"unix://{home}/whole.sock", named=False)
    static_remotes([f"bytes-named={named.address}", f"bytes-whole={whole.address}"])
    _counting()
    try:
        rows = {
            name: _session(f"bytes-{name}", max(50, args.turns), "x" * args.pad)
            for name in ("whole", "named")
        }
    finally:
        LANES.close()
        named.stop(0)
        whole.stop(0)
    kinds = sorted({kind for row in rows.values() for kind in row})
    print(f"bytes a message, mean of the last 50 of {max(50, args.turns)} turns: whole / named")
    for kind in kinds:
        print(f"  {kind:28s} {rows['whole'].get(kind, 0):9.0f} {rows['named'].get(kind, 0):9.0f}")
    a, b = (sum(row.values()) for row in (rows["whole"], rows["named"]))
    print(f"  {'a turn':28s} {a:9.0f} {b:9.0f} ({b / a:.2f}x)")


if __name__ == "__main__":
    main()

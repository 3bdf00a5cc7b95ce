"""Where our gRPC client's CPU goes in a turn (issue 21): the calling thread's CPU per echo
turn against a real ``agentsessions serve``, measured in the cache state a client really
has (each turn waits for the daemon, so the client's code runs cold):

    python bench/grpc_client.py              # 1,500 turns of each kind, interleaved
    python bench/grpc_client.py --turns 300  # a smoke check

Three kinds of turn, interleaved one by one so that the machine's load falls on each alike,
each on its own session (a client's turns on one session, as a chat runs them):

- whole: ``exec`` through :mod:`agentsessions.client`, every frame iterated;
- bare call: the same ExecQuick request, built once, sent through the stub; no conversion;
- conversion: a bare call's reply read as frames (every record's hash and JSON, each
  session's unknown fields checked), the conversion alone timed.

Printed: medians per turn, and what the whole turn and the conversion cost as ratios to the
bare call (what no client of ours could go below). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]  # grpc.py beside us
sys.path.insert(0, str(ROOT))

from agentsessions.client import dial  # noqa: E402
from agentsessions.client.turns import LastSession, quick_turn  # noqa: E402
from agentsessions.wire.gen import common_pb2, session_pb2  # noqa: E402

TEXT = "hello there"


def _request(uid: str) -> session_pb2.ExecRequest:
    text = common_pb2.Message(role="user", parts=[{"text": {"text": TEXT}}])
    return session_pb2.ExecRequest(session=uid, inputs=[text], batched=True)


def measure(address: str, turns: int) -> dict[str, float]:
    """Median thread-CPU microseconds per turn of each kind (see the module docstring)."""
    clock = time.thread_time_ns
    with dial(address) as client:
        uids = [client.run(None, ["warm up"]).uid for _ in range(3)]
        bare, converted = _request(uids[1]), _request(uids[2])
        call = client._stub.ExecQuick.with_call  # the stub our client calls
        sessions = LastSession()
        times: dict[str, list[int]] = {"whole": [], "bare call": [], "conversion": []}
        for n in range(3 * (turns + 50)):
            kind = n % 3
            start = clock()
            if kind == 0:
                for _ in client.exec(uids[0], [TEXT]):
                    pass
                spent, name = clock() - start, "whole"
            elif kind == 1:
                call(bare)
                spent, name = clock() - start, "bare call"
            else:
                reply, ended = call(converted)
                start = clock()
                for _ in quick_turn(reply, ended, client._rest, address, sessions):
                    pass
                spent, name = clock() - start, "conversion"
            if n >= 150:  # after 50 warm-up turns of each kind
                times[name].append(spent)
    return {name: statistics.median(t) / 1e3 for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1500, help="turns of each kind")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-grpc-client-") as tmp:
        argv = [sys.executable, "-m", "agentsessions", "--home", str(Path(tmp) / "served"),
                "serve", "--listen", "127.0.0.1:0", "--no-auth"]  # fmt: skip
        daemon = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT
        )
        try:
            assert daemon.stdout is not None
            line = daemon.stdout.readline()
            if not line.startswith("listening on "):
                raise SystemExit(f"bench: agentsessions serve did not start: {line!r}")
            out = measure(line.split()[-1], args.turns)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=60)
    bare = out["bare call"]
    print(f"client thread CPU per echo turn (medians of {args.turns}): whole turn "
          f"{out['whole']:.1f} us ({out['whole'] / bare:.2f}x a bare call), bare call "
          f"{bare:.1f} us, converting a reply {out['conversion']:.1f} us "
          f"({out['conversion'] / bare:.2f}x a bare call)")  # fmt: skip


if __name__ == "__main__":
    main()

"""What running a harness over Harness.Connect costs: ratios against the same harness in process.

    python bench/harness_wire.py            # 200 turns each way
    python bench/harness_wire.py --quick    # 20 turns, a smoke check

The chat harness with the echo model, on one session of a file store in a temporary home:
per-turn time of ``exec`` when the harness runs in process (``chat``) and when it runs
behind ``HarnessServer`` on a unix socket in this process (``remote-chat``: every effect
crosses the wire and back), then ``replay --rerun`` of each session. The turns are short
(one model call), so the ratio is the protocol's overhead at its largest. No number here is
asserted by a test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agentsessions
from agentsessions.sessions.harnessbook import static_remotes
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.wire.harnessnode import HarnessServer


def _turns(engine: agentsessions.Sessions, harness: str, n: int) -> tuple[str, float]:
    uid = engine.run(harness=harness, inputs=["warm up"]).uid
    began = time.perf_counter()
    for i in range(n):
        engine.run(uid, [f"turn {i}"])
    return uid, (time.perf_counter() - began) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    n = 20 if parser.parse_args().quick else 200
    sock = f"unix://{tempfile.mkdtemp(prefix='ash-bench-')}/chat.sock"
    server = HarnessServer(HARNESSES.factory("chat"), sock)
    static_remotes([f"remote-chat={server.address}"])
    try:
        with agentsessions.open(tempfile.mkdtemp(), runtime="local") as engine:
            local_uid, local = _turns(engine, "chat", n)
            remote_uid, remote = _turns(engine, "remote-chat", n)
            began = time.perf_counter()
            engine.rerun(local_uid)
            replay_local = time.perf_counter() - began
            began = time.perf_counter()
            report = engine.rerun(remote_uid)
            replay_remote = time.perf_counter() - began
    finally:
        server.stop(0)
    print(f"exec per turn: in process {local * 1e3:.2f} ms, over the wire {remote * 1e3:.2f} ms "
          f"(ratio {remote / local:.2f}x)")  # fmt: skip
    print(f"replay --rerun of {n + 1} turns: in process {replay_local * 1e3:.0f} ms, over the "
          f"wire {replay_remote * 1e3:.0f} ms (ratio {replay_remote / replay_local:.2f}x, "
          f"{report.model_calls} model calls)")  # fmt: skip


if __name__ == "__main__":
    main()

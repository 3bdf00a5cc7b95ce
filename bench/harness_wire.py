"""What running a harness over Harness.Connect costs: ratios against the same harness in process.

    python bench/harness_wire.py                # 200 turns each way
    python bench/harness_wire.py --turns 2000   # a long session: is the cost flat?
    python bench/harness_wire.py --quick        # 20 turns, a smoke check
    python bench/harness_wire.py --hookless     # A/B: the node without grpc's send hook too

The chat harness with the echo model, on one session of a file store in a temporary home
each: a turn in process (``chat``) and a turn on the same harness behind ``HarnessServer``
on a unix socket in this process (``remote-chat``: every effect crosses the wire and back),
interleaved turn by turn (the order rotated each time) so both see the same machine. The
median per-turn wall time of each is printed for the whole run and its first and last tenth
(a node keeps each session's history and a Start carries only what is new, so the last
tenth should cost what the first does), then the median CPU time of this process per turn,
both ends of the wire included (a figure the machine's load disturbs less), and a fourth
kind of turn on a node in a process of its own (``agentsessions harness serve chat``, as a
node is deployed: no interpreter lock shared with the host). The floor row
interleaves a third kind of turn: the same messages over a kept stream to a node that answers
at once (``harness_floor.py``: no harness, no journal), and prints what a remote turn would
cost if the wire added only that to the turn in process: the best ratio this transport
allows on this machine; the second floor row answers from a thread of the node's own, as a
node must run a synchronous harness behind grpc's sync server (``ThreadedNode``: that thread
reads the frames and sends through grpc's send callback, as the node's runner does); the
third is that exchange with the host's end on grpc's threaded client stream (its request
and channel threads between the host and the wire, as hosts ran before the inline stream:
what those hand-offs cost); the fourth is the second with a sync of a file before each
exchange, untimed (a turn's Start follows its first commit's sync, so both ends wake from
threads that slept through it, where back-to-back exchanges find them just run); the rows
after them are what a remote turn spends beyond the turn in process and the second floor,
then the fourth (the protocol's own work, both ends: what the target leaves room for). A
fifth kind of turn, interleaved too, runs on the same node sending every model call's
messages whole (``named=False``, as a node before a model call named the messages of the
history the host holds) and prints the named calls' turn against it (quiet, it printed
0.90-0.97x wall, where the two nodes alone, interleaved, differed by no more than 12 µs of
~1,050: what named calls change is the bytes, ``bench/harness_bytes.py``). Then
``replay --rerun`` of each session (a node keeps a rerun's history too). The turns are short (one
model call), so the ratio is the protocol's overhead at its largest. No number here is
asserted by a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
# bench/ holds a grpc.py: its own directory must not shadow the grpc package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(ROOT))

import agentsessions  # noqa: E402
from agentsessions.sessions.api import Sessions  # noqa: E402
from agentsessions.sessions.harnessbook import static_remotes  # noqa: E402
from agentsessions.sessions.wiring import HARNESSES  # noqa: E402
from agentsessions.wire.harnesslinks import LANES  # noqa: E402
from agentsessions.wire.harnessnode import HarnessServer  # noqa: E402
from bench.harness_floor import Floor, hookless_node  # noqa: E402

Times = list[tuple[float, float]]


def _turn(engine: Sessions, uid: str, i: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this whole process: host and node) of one turn."""
    began, cpu = time.perf_counter(), time.process_time()
    engine.run(uid, [f"turn {i}"])
    return time.perf_counter() - began, time.process_time() - cpu


def _interleaved(
    engine: Sessions, n: int, floors: list[Floor], more: list[str]
) -> tuple[Times, Times, Times, list[Times], str, str]:
    """Per-turn times of ``n`` turns in process, ``n`` remote (node in this process), ``n``
    remote on a node process of its own, and ``n`` exchanges on each floor, in turn, the
    order rotated each time."""
    local_uid = engine.run(harness="chat", inputs=["warm up"]).uid
    remote_uid = engine.run(harness="remote-chat", inputs=["warm up"]).uid
    apart_uid = engine.run(harness="remote-chat-apart", inputs=["warm up"]).uid
    local: Times = []
    remote: Times = []
    apart: Times = []
    bare: list[Times] = [[] for _ in floors + more]
    more_uids = [engine.run(harness=name, inputs=["warm up"]).uid for name in more]
    kinds = [
        lambda i: local.append(_turn(engine, local_uid, i)),
        lambda i: remote.append(_turn(engine, remote_uid, i)),
        lambda i: apart.append(_turn(engine, apart_uid, i)),
        *(lambda i, f=f, t=t: t.append(f.turn()) for f, t in zip(floors, bare, strict=False)),
        *(
            lambda i, u=u, t=t: t.append(_turn(engine, u, i))
            for u, t in zip(more_uids, bare[len(floors) :], strict=True)
        ),
    ]
    for i in range(n):
        for k in range(len(kinds)):
            kinds[(i + k) % len(kinds)](i)
    return local, remote, apart, bare, local_uid, remote_uid


def _node_process(address: str) -> subprocess.Popen[bytes]:
    """``agentsessions harness serve chat --listen ADDRESS`` as a process of its own (how a
    node is deployed), once it prints the address it listens on."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "agentsessions", "harness", "serve", "chat", "--listen", address]
    node = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert node.stdout is not None
    if not node.stdout.readline():  # the address line: it listens
        raise SystemExit(f"harness serve exited ({node.wait()}) before it listened")
    return node


def _line(what: str, local: Times, remote: Times, which: int = 0) -> str:
    a = statistics.median(t[which] for t in local)
    b = statistics.median(t[which] for t in remote)
    return (
        f"{what}: in process {a * 1e3:.2f} ms, over the wire {b * 1e3:.2f} ms (ratio {b / a:.2f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 turns")
    parser.add_argument("--turns", type=int, default=200, help="turns each way (default 200)")
    parser.add_argument(
        "--no-replay", action="store_true", help="skip the reruns"
    )  # fmt: skip
    parser.add_argument(
        "--hookless",
        action="store_true",
        help="also turns on the node without grpc's send hook (its handler sends): an A/B",
    )
    args = parser.parse_args()
    n = 20 if args.quick else max(10, args.turns)
    home = tempfile.mkdtemp(prefix="ash-bench-")
    server = HarnessServer(HARNESSES.factory("chat"), f"unix://{home}/chat.sock")
    node = _node_process(f"unix://{home}/apart.sock")
    static_remotes([f"remote-chat={server.address}", f"remote-chat-apart=unix://{home}/apart.sock"])
    floors = [
        Floor(f"unix://{home}/bare.sock"),
        Floor(f"unix://{home}/hop.sock", True),
        Floor(f"unix://{home}/threads.sock", True, grpc_threads=True),
        Floor(f"unix://{home}/synced.sock", True, synced=True),
    ]
    whole = HarnessServer(HARNESSES.factory("chat"), f"unix://{home}/whole.sock", named=False)
    static_remotes([f"remote-chat-whole={whole.address}"])
    more = ["remote-chat-whole", *(["remote-chat-hookless"] if args.hookless else [])]
    hookless = None
    if args.hookless:  # the A/B: the same node, its handler sending what its runner queues
        hookless = hookless_node(HARNESSES.factory("chat"), f"unix://{home}/hookless.sock")
        static_remotes([f"remote-chat-hookless=unix://{home}/hookless.sock"])
    try:
        with agentsessions.open(tempfile.mkdtemp(), runtime="local") as engine:
            local, remote, apart, bare, local_uid, remote_uid = _interleaved(
                engine, n, floors, more
            )
            replays = None if args.no_replay else _reruns(engine, local_uid, remote_uid)
    finally:
        for floor in floors:
            floor.close()
        LANES.close()  # the kept streams end before their node does
        server.stop(0)
        whole.stop(0)
        if hookless is not None:
            hookless.stop(0)
        node.terminate()
        node.wait()
    tenth = max(1, n // 10)
    print(_line(f"exec per turn, median of {n}", local, remote))
    print(_line(f"  turns 1-{tenth}", local[:tenth], remote[:tenth]))
    print(_line(f"  turns {n - tenth + 1}-{n}", local[-tenth:], remote[-tenth:]))
    print(_line("CPU per turn (host and node), median", local, remote, 1))
    print(_line("node in its own process (harness serve), median", local, apart))
    print(_floor("floor: the bare exchange of a turn's messages", local, bare[0]))
    print(_floor("  answered from a thread of the node's own", local, bare[1]))
    print(_floor("  that, the host on grpc's threaded client stream", local, bare[2]))
    print(_floor("  the node's thread, each exchange after a sync (as a turn's)", local, bare[3]))
    print(_own(local, remote, bare[1]))
    print(_own(local, remote, bare[3], "the synced floor"))
    print(_named(local, remote, bare[len(floors)]))
    if args.hookless:
        print(_ab(remote, bare[len(floors) + 1]))
    if replays is not None:
        replay_local, replay_remote, calls = replays
        print(f"replay --rerun of {n + 1} turns: in process {replay_local * 1e3:.0f} ms, over "
              f"the wire {replay_remote * 1e3:.0f} ms (ratio {replay_remote / replay_local:.2f}x, "
              f"{calls} model calls)")  # fmt: skip


def _floor(what: str, local: Times, bare: Times) -> str:
    """A floor row: a turn in process plus the exchange, against the turn alone."""
    a, b = (statistics.median(t[0] for t in x) for x in (local, bare))
    c, d = (statistics.median(t[1] for t in x) for x in (local, bare))
    return (
        f"{what} {b * 1e3:.2f} ms ({d * 1e3:.2f} ms CPU); in process plus it "
        f"{(a + b) / a:.2f}x the turn in process ({(c + d) / c:.2f}x CPU)"
    )


def _own(local: Times, remote: Times, floor: Times, which: str = "that floor") -> str:
    """What a remote turn costs beyond the turn in process and the threaded floor: the
    protocol's own work on both ends (building, reading and checking what crosses, the
    history kept, the lanes), which the target leaves room for."""
    wall, cpu = (
        statistics.median(t[i] for t in remote)
        - statistics.median(t[i] for t in local)
        - statistics.median(t[i] for t in floor)
        for i in (0, 1)
    )
    return (
        f"  beyond the turn in process and {which}, the protocol's own (host and node): "
        f"{wall * 1e3:.2f} ms ({cpu * 1e3:.2f} ms CPU)"
    )


def _named(local: Times, remote: Times, whole: Times) -> str:
    """The node's model calls naming the history's messages, against the same calls sent
    whole, in this run."""
    wall, cpu = (
        statistics.median(t[i] for t in remote) / statistics.median(t[i] for t in whole)
        for i in (0, 1)
    )
    ratio = statistics.median(t[0] for t in whole) / statistics.median(t[0] for t in local)
    return (
        f"model calls naming the history's messages, against every message sent whole: "
        f"{wall:.3f}x wall, {cpu:.3f}x CPU (whole: {ratio:.2f}x the turn in process)"
    )


def _ab(remote: Times, hookless: Times) -> str:
    """The node as served against the same node without grpc's send hook, in this run."""
    wall, cpu = (
        statistics.median(t[i] for t in remote) / statistics.median(t[i] for t in hookless)
        for i in (0, 1)
    )
    return (
        f"the node as served, against the same node without grpc's send hook (its handler "
        f"sends what its runner queues): {wall:.3f}x wall, {cpu:.3f}x CPU"
    )


def _reruns(engine: Sessions, local_uid: str, remote_uid: str) -> tuple[float, float, int]:
    """Seconds of ``replay --rerun`` of each session, and the remote one's model calls."""
    began = time.perf_counter()
    engine.rerun(local_uid)
    replay_local = time.perf_counter() - began
    began = time.perf_counter()
    report = engine.rerun(remote_uid)
    return replay_local, time.perf_counter() - began, report.model_calls


if __name__ == "__main__":
    main()

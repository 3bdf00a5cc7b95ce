"""What a ``bench/jetstream_rates.py`` run's figures say: the rows' names, the ratios issue
21 sets for JetStream (:func:`targets`) and the printed report (:func:`report`). Reads the
result only; measures nothing.
"""

from __future__ import annotations

import statistics
from typing import Any

SPREAD = "R1 streams"  # each session in a stream of its own: what sharding sessions would give
SHARDED = "R1 8 shards"  # one deployment spread over 8 streams (jetstream/shards.py)
SHARED = "R1 one store"  # the sessions in one store (one connection), as a daemon holds them
SHARED_SHARDED = "one store 8 sh"  # the two together: one connection, 8 streams
BARE, BARE_SPREAD = "bare R1", "bare R1 streams"  # the server's ceiling (jetstream_bare.py)
RAW, RAW_SPREAD = "raw R1", "raw R1 streams"  # its floor for a synchronous Python client
VIA_NATS_PY = "R1 via nats-py"  # the store, commits through nats-py (not jetstream/lean.py)


def targets(result: dict[str, Any]) -> list[tuple[str, float, str]]:
    """The ratios issue 21 sets for JetStream, from this run's rows: (what, ratio, target)."""
    rate = {(r["side"], r["events_per_commit"], r["sessions"]): r["commits_per_s"]
            for r in result.get("rates", ())}  # fmt: skip
    out = []
    for n, goal in ((1, ">= 0.5"), (8, ">= 1")):
        fs, r1, r3 = (rate.get((side, 1, n)) for side in _STORES)
        if fs and r1 and r3:
            out.append((f"1-event commits, {n} session(s): R1 / file store", r1 / fs, goal))
            out.append((f"1-event commits, {n} session(s): R3 / R1", r3 / r1, ""))
        spread, shared = rate.get((SPREAD, 1, n)), rate.get((SHARED, 1, n))
        both = rate.get((SHARED_SHARDED, 1, n))
        if fs and both and n > 1:
            what = f"1-event commits, {n} sessions in one store, 8 shards / file store"
            out.append((what, both / fs, ""))
        if fs and spread and n > 1:
            out.append(
                (f"1-event commits, {n} sessions, a stream each / file store", spread / fs, "")
            )
        sharded = rate.get((SHARDED, 1, n))
        if fs and sharded and n > 1:
            out.append((f"1-event commits, {n} sessions, 8 shards / file store", sharded / fs, ""))
        if fs and shared and n > 1:
            what = f"1-event commits, {n} sessions in one store / file store"
            out.append((what, shared / fs, ""))
        slow = rate.get((VIA_NATS_PY, 1, n))
        if r1 and slow:
            out.append((f"  the lean publisher: R1 / {VIA_NATS_PY}, {n} session(s)", r1 / slow, ""))
        pairs = [(BARE, "jetstream R1"), (RAW, "jetstream R1")]
        if n > 1:
            pairs += [(BARE_SPREAD, SHARDED), (RAW_SPREAD, SHARDED)]
        for side, store in pairs:  # each ceiling, and the store row it bounds
            bare, got = rate.get((side, 1, n)), rate.get((store, 1, n))
            if fs and bare and got:
                out.append((f"  ceiling: {side}, {n} session(s) / file store", bare / fs, ""))
                out.append((f"  the store's share: {store} / {side}", got / bare, ""))
    turn = {r["side"]: r["turn_ms"] for r in result.get("turns", ())}
    if len(turn) == len(_STORES):
        fs, r1, r3 = (turn[side] for side in _STORES)
        out.append(("exec turn time: R1 / file store", r1 / fs, "<= 3"))
        out.append(("exec turn time: R3 / R1", r3 / r1, ""))
    return out


_STORES = ("file store", "jetstream R1", "jetstream R3")


def report(result: dict[str, Any]) -> None:
    """Print the run's tables, then :func:`targets`."""
    if "rates" in result:
        print(f"{'side':<16}{'ev/c':>5}{'sess':>5}{'commits/s':>11}{'events/s':>10}"
              f"{'x loop':>8}{'x store':>8}")  # fmt: skip
        for r in result["rates"]:
            print(
                f"{r['side']:<16}{r['events_per_commit']:>5}{r['sessions']:>5}"
                f"{r['commits_per_s']:>11.0f}{r['events_per_s']:>10.0f}"
                f"{r['vs_file_loop']:>8.2f}{r['vs_file_store']:>8.2f}"
            )
    if "turns" in result:
        print(f"\n{'exec turn':<14}{'ms':>8}{'x store':>9}")
        for r in result["turns"]:
            print(f"{r['side']:<14}{r['turn_ms']:>8.2f}{r['vs_file_store']:>9.2f}")
    if "follow" in result:
        print(f"\n{'follow (ms)':<14}{'ack p50':>8}{'ack p99':>8}{'send p50':>9}{'send p99':>9}"
              f"{'n':>5}  (from the writer's ack / its append call)")  # fmt: skip
        base = result["follow"][0]
        for r in result["follow"]:
            print(f"{r['side']:<14}{r['p50_ms']:>8.2f}{r['p99_ms']:>8.2f}{r['send_p50_ms']:>9.2f}"
                  f"{r['send_p99_ms']:>9.2f}{r['samples']:>5}  send p50 "
                  f"{r['send_p50_ms'] / base['send_p50_ms']:.2f}x the file store's")  # fmt: skip
    if "crypto" in result:
        print(f"\n{'encryption':<14}{'ev/c':>5}{'plain c/s':>11}{'sealed c/s':>12}{'x plain':>9}")
        for r in result["crypto"]:
            print(
                f"{r['store']:<14}{r['events_per_commit']:>5}{r['plain_commits_per_s']:>11.0f}"
                f"{r['encrypted_commits_per_s']:>12.0f}{r['encrypted_vs_plain']:>9.2f}"
            )
    if "failover" in result:
        secs = [r["seconds"] for r in result["failover"]]
        each = ", ".join(f"{s:.2f}" for s in secs)
        print(
            f"\nfailover (SIGKILL of the R3 leader): appends succeed again after {each} s "
            f"(median {statistics.median(secs):.2f} s)"
        )
    goals = targets(result)
    if goals:
        print("\ntargets (issue 21)")
        for what, ratio, goal in goals:
            print(f"  {what:<58}{ratio:>7.2f}x  {('target ' + goal) if goal else ''}")

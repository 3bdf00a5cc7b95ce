"""bench/jetstream_rates.py measures commit rates, exec turns and follow latency on the file
loop, the file store, JetStream R1 and R3 in one run. Figures are not asserted (a shared, noisy
machine); that every side really ran is. The failover section (an election: seconds) is
left to the bench itself and to ``test_jetstream_failover.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from needs import need_nats_server

ROOT = Path(__file__).resolve().parents[2]


def test_the_quick_bench_measures_every_side() -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    need_nats_server()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "jetstream_rates.py"), "--quick", "--json",
         "--only", "rates,turns,follow,crypto"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    sides = {"file loop", "file store", "jetstream R1", "jetstream R3"}
    cells = {(r["side"], r["events_per_commit"], r["sessions"]) for r in out["rates"]}
    more = {"R1 streams", "R1 8 shards", "R1 one store", "one store 8 sh", "bare R1",
            "bare R1 streams", "raw R1", "raw R1 streams", "R1 via nats-py"}  # fmt: skip
    assert cells == {(s, e, n) for s in {*sides, *more} for e in (1, 16) for n in (1, 8)}
    assert all(r["commits_per_s"] > 0 and r["vs_file_loop"] > 0 for r in out["rates"])
    assert {r["side"] for r in out["turns"]} == sides - {"file loop"}
    assert all(r["turn_ms"] > 0 and r["vs_file_store"] > 0 for r in out["turns"])
    assert {r["side"] for r in out["follow"]} == sides - {"file loop"}
    assert all(r["samples"] > 0 and r["send_p50_ms"] > 0 for r in out["follow"])
    cells = {(r["store"], r["events_per_commit"]) for r in out["crypto"]}
    assert cells == {(s, e) for s in ("file store", "jetstream R1") for e in (1, 16)}
    assert all(r["encrypted_vs_plain"] > 0 for r in out["crypto"])

"""Simulated power cuts at every sync site, through the durable module's crash file system.

A probe run of the workload (``agent_proc --power``) lists every sync it made (file and
directory syncs: ``SYNC k name file``). Each cut then runs the same workload again from
scratch with ``--crash-at k``: just before its kth mutating operation the power goes, so
every byte written since the last sync is lost (and every file created since its directory
was last synced), the process ends on the spot, and a fresh engine recovers and resumes
every session. The invariants of ``ledger.check`` must hold after each cut.

(The crash file system can also keep a random subset of the unsynced sectors, as a disk
persists pages in any order: ``agent_proc --cut-seed``. Not used here: when two unsynced
groups were written and the later one survives whole while the earlier one is torn, the
file store refuses to open the session, "a later committed group follows", rather than cut
it; nothing acknowledged is lost, but the session needs a person. docs/benchmarks/torture.md
has the case.)

The default run cuts once at each kind of sync site (the operation and the kind of file
it syncs); ``AGENTSESSIONS_TORTURE=N`` cuts at every sync of the probe run, over
``1 + N // 10`` seeds of the workload.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.torture import tally
from tests.torture.agent_proc import POWER_CUT
from tests.torture.ledger import Ledger
from tests.torture.procs import start_writer
from tests.torture.rounds import count_acked, settle
from tests.torture.tally import TALLY

TURNS = 10
WORKLOADS = 1 + tally.SIZE // 10


def _site(name: str, file: str) -> str:
    """The kind of a sync site: the operation and the file's name without its numbers."""
    return f"{name} {re.sub(r'[0-9a-f]{6,}', '#', file)}"


def _syncs(tmp_path: Path, seed: int) -> dict[int, str]:
    """The probe run's syncs: operation index -> site kind."""
    writer = start_writer(tmp_path / "home", tmp_path / "effects.txt", seed, "--power",
                          f"--turns={TURNS}")  # fmt: skip
    assert writer.finish() == 0, writer.stderr()
    sites = {}
    for line in writer.lines:
        if line.startswith("SYNC "):
            _, index, name, file = line.split(" ", 3)
            sites[int(index)] = _site(name, file)
    assert sites, "the probe run made no sync"
    return sites


def _cut(tmp_path: Path, seed: int, at: int) -> str:
    """Run the workload until the power goes before operation ``at``; check; what was cut."""
    home, effects, ledger = tmp_path / "home", tmp_path / "effects.txt", Ledger()
    writer = start_writer(home, effects, seed, f"--turns={TURNS}", f"--crash-at={at}")
    code = writer.finish()
    writer.kill()  # a warm host the writer had started goes down with the machine
    ledger.take(writer.lines)
    cut = next((line for line in writer.lines if line.startswith("CUT ")), "")
    assert code in (0, POWER_CUT), writer.stderr()
    if cut:
        settle(home, effects, ledger)
    count_acked(ledger)
    return cut


def _chosen(sites: dict[int, str]) -> list[int]:
    """Every sync (a long run), or the first of each kind of site (the default run)."""
    if tally.SIZE:
        return sorted(sites)
    first: dict[str, int] = {}
    for index, kind in sorted(sites.items()):
        first.setdefault(kind, index)
    return sorted(first.values())


@pytest.mark.torture
@pytest.mark.timeout(600 + 3 * 60 * WORKLOADS * max(1, tally.SIZE))
def test_power_cut_at_every_sync_site_loses_nothing_acknowledged(tmp_path: Path) -> None:
    rng = tally.rng("power-cut")
    for workload in range(WORKLOADS):
        seed = rng.randrange(1 << 30)
        sites = _syncs(tmp_path / f"probe-{workload}", seed)
        for at in _chosen(sites):
            cut = _cut(tmp_path / f"w{workload}-cut-{at}", seed, at)
            if cut:
                TALLY.fault(f"power-cut:{cut.split()[1]}")

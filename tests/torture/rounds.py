"""One round of a fault family's loop: bring the store back, check it, count it.

Every family (kills, power cuts, concurrent writers, leader kills) ends each fault the same
way: a fresh engine (another process's view: nothing cached) recovers every session, the
ledger's invariants are checked, and the tally learns what was checked. A violation fails
the test with every line of it and the seed that repeats the run.
"""

from __future__ import annotations

from pathlib import Path

from agentsessions.sessions.local import LocalSessions, open_local
from tests.torture import tally
from tests.torture.agent import register
from tests.torture.ledger import Findings, Ledger, all_sessions, check, recover
from tests.torture.tally import TALLY


def engine(home: Path, store_url: str = "") -> LocalSessions:
    """An engine on the store under test (the torture model registered)."""
    register()
    return open_local(home, store_url=store_url or None)


def settle(home: Path, effects: Path, ledger: Ledger, store_url: str = "") -> Findings:
    """Recover every session, then check every invariant; fail with every violation."""
    with engine(home, store_url) as sessions:
        for uid in all_sessions(sessions, ledger):
            TALLY.resolved += recover(sessions, uid, effects)
            if uid not in ledger.sessions:  # made by a writer killed before it said so
                harness = sessions.get(uid).harness
                ledger.sessions[uid] = "memory" if harness == "memory" else "chat"
        found = check(sessions, ledger, effects)
    TALLY.lost += len(found.lost)
    problems = found.lost + found.violations
    assert not problems, f"seed {tally.SEED}: " + "\n".join(problems[:40])
    return found


def count_acked(ledger: Ledger) -> None:
    """Add a finished test's acknowledged records to the run's tally."""
    TALLY.acked += len(ledger.acked)

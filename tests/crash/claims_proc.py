"""What a process does in the key-claim crash and race tests (``test_ensure_race.py``):
functions at module level, so ``multiprocessing``'s spawn start method can run them.

``where`` is ``(home, url)``: the engine's home, and a ``nats://`` store URL or "" for
the file store under the home (:func:`~agentsessions.sessions.local.open_local`'s).
"""

from __future__ import annotations

import time
from typing import Any

PROJECT = "race"


def _engine(where: tuple[str, str]) -> Any:
    from agentsessions.sessions.local import open_local

    home, url = where
    return open_local(home, store_url=url or None)


def racer(where: tuple[str, str], prefix: str, rounds: int, barrier: Any, out: Any) -> None:
    """Call ``ensure`` on key ``prefix-R`` at the barrier's release, for each round R; put
    ``(R, uid, created)`` for each."""
    engine = _engine(where)
    try:
        for r in range(rounds):
            barrier.wait(timeout=120)
            session, created = engine.ensure(f"{prefix}-{r}", project=PROJECT, name=f"{r}")
            out.put((r, session.uid, created))
    finally:
        engine.close()


def claim_then_hang(where: tuple[str, str], key: str, out: Any) -> None:
    """Call ``ensure`` on ``key``, stopped after its claim and before its create: put the
    uid claimed, then wait to be killed (SIGKILL, as a machine loses a process)."""
    from agentsessions.sessions import claims

    def hang(_engine: Any, meta: Any, _workload: Any) -> Any:
        out.put(meta.uid)
        while True:
            time.sleep(1)

    claims.store_new = hang  # ensure calls the module's store_new after its claim
    _engine(where).ensure(key, project=PROJECT)

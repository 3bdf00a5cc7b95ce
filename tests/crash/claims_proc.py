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


def exec_racer(where: tuple[str, str], rounds: int, barrier: Any, out: Any) -> None:
    """Run a turn by origin ``github`` ``o/r#R`` at the barrier's release, for each round
    R (``exec --origin`` without a uid); put ``(R, uid, created, pid)`` for each.

    On JetStream (no cross-host lock) a turn may lose its writer to another process's:
    FencedError, or a turn cut after its inputs landed that the next writer finds open.
    The racer reacts as a producer would: its input landed already, or it resumes what is
    open and tries again (so each input lands once)."""
    import os

    from agentsessions.errors import FencedError, InvalidExecutionLogError

    engine = _engine(where)
    text = f"from {os.getpid()}"
    try:
        for r in range(rounds):
            origin = {"source": "github", "subject": f"o/r#{r}"}
            barrier.wait(timeout=120)
            for _ in range(20):
                try:
                    done = engine.run(
                        inputs=[text], origin=origin, project=PROJECT, harness="echo",
                        name=f"{r}", wait=60.0,
                    )  # fmt: skip
                    uid, created = done.session.uid, bool(done.turn and done.turn.created)
                    break
                except (FencedError, InvalidExecutionLogError):
                    uid, created = _landed(engine, origin, text), False
                    if uid:
                        break
            engine.release(uid)  # the engine holds its writer across turns
            out.put((r, uid, created, os.getpid()))
    finally:
        engine.close()


def _landed(engine: Any, origin: dict[str, str], text: str) -> str:
    """The uid of ``origin``'s session if an INPUT of ``text`` is in it, else "" after
    completing a turn left open there (each input is to land once)."""
    from agentsessions.errors import AgentSessionsError

    session = engine.find(origin=origin, project=PROJECT)
    if session is None:
        return ""
    engine.release(session.uid)
    mine = [
        rec
        for rec in engine.read(session.uid)
        if rec.event.get("kind") == "EVENT_INPUT"
        and rec.event["message"]["parts"][0]["text"]["text"] == text
    ]
    if mine:
        return str(session.uid)
    try:
        for _ in engine.resume(session.uid, wait=60.0):
            pass
    except AgentSessionsError:  # another process completes it, or holds it now
        pass
    engine.release(session.uid)
    return ""


def claim_then_hang(where: tuple[str, str], key: str, out: Any) -> None:
    """Call ``ensure`` on ``key``, stopped after its claim and before its create: put the
    uid claimed, then wait to be killed (SIGKILL, as a machine loses a process)."""
    from agentsessions.sessions.claims import SessionClaims

    def hang(_claims: Any, meta: Any, _workload: Any) -> Any:
        out.put(meta.uid)
        while True:
            time.sleep(1)

    SessionClaims.store_new = hang  # ensure creates through it, after its claim
    _engine(where).ensure(key, project=PROJECT)

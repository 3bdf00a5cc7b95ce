"""What the writers were told, how a crashed store is brought back, and the invariants.

:class:`Ledger` keeps every acknowledgement a writer printed (``ACK uid seq hash``) and
every session it worked on. After a fault, :func:`recover` completes every open turn the
way an operator would (resume; approve a parked call; resolve a call whose outcome is
unknown with what the effects file shows), then :func:`check` holds the store to the
promises, returning each violation as one line:

- every acknowledged record is present once, at its seq, with the acknowledged hash;
- no seq is reused (a seq acknowledged twice with two contents) and none is skipped;
- the chain verifies;
- every at-most-once effect ran at most once: no line of the effects file is there twice,
  and no tool call has two results;
- a replay of every completed turn is identical and calls the model 0 times.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agentsessions.errors import ApprovalParkedError, ToolOutcomeUnknownError
from agentsessions.sessions.api import Sessions

RECOVERY_ROUNDS = 8  # a turn parks, is approved, resumes: a few rounds bring any turn home


@dataclass
class Ledger:
    """Acknowledged records and known sessions, as writers reported them."""

    acked: dict[tuple[str, int], str] = field(default_factory=dict)
    sessions: dict[str, str] = field(default_factory=dict)
    reused: list[str] = field(default_factory=list)

    def take(self, lines: Iterable[str]) -> str:
        """Read a writer's output; the turn kind it last announced ("" if none)."""
        phase = ""
        for line in lines:
            word, *rest = line.split() or [""]
            if word == "ACK" and len(rest) == 3:
                self.ack(rest[0], int(rest[1]), rest[2])
            elif word == "SESSION" and len(rest) == 2:
                self.sessions[rest[0]] = rest[1]
            elif word == "PHASE" and len(rest) == 2:
                phase = rest[1]
        return phase

    def ack(self, uid: str, seq: int, digest: str) -> None:
        """One acknowledged record; a second, different one at its seq is a reused seq."""
        known = self.acked.setdefault((uid, seq), digest)
        if known != digest:
            self.reused.append(f"{uid} seq {seq} acknowledged as {known[:12]} and {digest[:12]}")

    def adopt_args(self) -> list[str]:
        """``--adopt`` arguments that make a new writer continue these sessions."""
        return [f"--adopt={uid}:{kind}" for uid, kind in sorted(self.sessions.items())]


def all_sessions(engine: Sessions, ledger: Ledger) -> list[str]:
    """Every session of the store's default project and every one the ledger knows."""
    found, cursor = set(ledger.sessions), None
    while True:
        page = engine.list(page_size=200, cursor=cursor)
        found.update(s.uid for s in page.sessions)
        cursor = page.next_cursor
        if not cursor:
            return sorted(found)


def recover(engine: Sessions, uid: str, effects: Path) -> int:
    """Complete ``uid``'s open turn, if any; how many unknown tool outcomes were resolved."""
    resolved = 0
    for _ in range(RECOVERY_ROUNDS):
        try:
            for _frame in engine.resume(uid):
                pass
            return resolved
        except ApprovalParkedError:
            engine.approve(uid, approved=True, actor="torture")
        except ToolOutcomeUnknownError:
            resolved += 1
            _resolve(engine, uid, effects)
    raise AssertionError(f"{uid}: the open turn did not complete in {RECOVERY_ROUNDS} rounds")


def _resolve(engine: Sessions, uid: str, effects: Path) -> None:
    """Answer an unknown outcome as an operator would, from the effects file."""
    ref = engine.get(uid).unresolved_call
    assert ref is not None, f"{uid}: outcome unknown but no call is unresolved"
    (record,) = engine.read(uid, from_seq=ref.call_seq, to_seq=ref.call_seq)
    line = str(record.event["tool"].get("args", {}).get("line", ""))
    written = effects.exists() and line in effects.read_text().splitlines()
    if written:
        engine.resolve(uid, call_id=ref.tool_call_id, result={"ok": True}, actor="torture")
    else:
        engine.resolve(uid, call_id=ref.tool_call_id, failed="did not run", actor="torture")


@dataclass
class Findings:
    """What :func:`check` found: counts for the summary and one line per violation."""

    records: int = 0
    acked: int = 0
    lost: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    replayed: int = 0


def check(engine: Sessions, ledger: Ledger, effects: Path, *, replay: bool = True) -> Findings:
    """Hold every session of the store to the invariants (see the module doc)."""
    out = Findings(acked=len(ledger.acked), violations=list(ledger.reused))
    stored: dict[tuple[str, int], str] = {}
    for uid in all_sessions(engine, ledger):
        seqs, calls = [], collections.Counter[str]()
        for record in engine.read(uid):
            seqs.append(record.seq)
            stored[(uid, record.seq)] = record.content_hash
            if record.event.get("kind") == "EVENT_TOOL_RESULT":
                calls[str(record.event["result"].get("id", ""))] += 1
        out.records += len(seqs)
        if seqs and seqs != list(range(seqs[0], seqs[0] + len(seqs))):
            out.violations.append(f"{uid}: seqs not consecutive: {seqs[:3]}...{seqs[-3:]}")
        twice = [f"{uid}: tool call {c} has {n} results" for c, n in calls.items() if n > 1]
        out.violations += twice
        report = engine.verify(uid)
        if not report.ok:
            out.violations.append(f"{uid}: the chain does not verify: {report.to_json()}")
        if replay and report.ok:
            out.replayed += 1
            rerun = engine.rerun(uid)
            if not rerun.identical or rerun.model_calls:
                out.violations.append(f"{uid}: replay differs or called the model: {rerun}")
    for (uid, seq), digest in ledger.acked.items():
        if stored.get((uid, seq)) != digest:
            now = stored.get((uid, seq))
            out.lost.append(f"{uid} seq {seq}: acknowledged {digest[:12]}, stored {now}")
    lines = effects.read_text().splitlines() if effects.exists() else []
    runs = collections.Counter(lines)
    out.violations += [f"effect {line!r} ran {n} times" for line, n in runs.items() if n > 1]
    return out

"""Durable evidence of how far a journal was acknowledged, and the check every reader runs.

Bytes alone cannot tell a journal cut at a group boundary from a shorter one, nor damage in
the last group from a torn final write. What was written *after* a commit can: each piece of
evidence below is a claim "seq N, with content hash H, was acknowledged", and none of them
adds a sync to the commit path (they are written after the commit's fdatasync returned, or
only on create/fork/close):

- the ``TAIL`` resume hint of a session directory (written without fsync by a writer every
  ``HINT_EVERY_COMMITS`` commits and when it closes). After a power loss it may be older than
  the journal or missing, never newer than the acknowledged head: a *lower bound*;
- a forked child's fork point: the child's first segment header names ``base_hash`` of
  the parent's seq ``fork_seq``, so the parent reached that seq with that hash;
- the head in the ``FENCE`` (:mod:`.fencefile`): each writer open records the head it found
  and checked, in the mint it syncs anyway. Durable and independent of ``TAIL``, it covers
  every commit before the latest writer open (docs/FORMAT.md 14 says why the latest
  writer's own commits have no second synced copy).

Sealed segments carry their own evidence (each SEAL names the last seq and hash of its
segment and the next header repeats them), which the segment readers check.

Invariants: a claim beyond the journal's end, or whose hash differs from the record at its
seq, raises :class:`~agentsessions.errors.AcknowledgedDataMissingError` (exit 8), before a
writable open changes anything; evidence that cannot be read is no evidence (it was only
ever a hint) and is ignored. What this cannot detect is listed in docs/FORMAT.md ("What
damage is detectable").
"""

from __future__ import annotations

import json
from pathlib import Path

from agentsessions.errors import AcknowledgedDataMissingError
from agentsessions.valueclass import value

TAIL_HINT = "TAIL hint"


@value(frozen=True)
class Acked:
    """A claim that ``seq`` (content hash ``hash``) was acknowledged, and where it came from.

    ``segment``/``frame``: the segment (its first seq) and offset of the frame holding
    ``seq`` when the evidence knows it (a TAIL hint does); 0/-1 otherwise.
    """

    seq: int
    hash: str
    source: str
    segment: int = 0
    frame: int = -1


def of_hint(segment: int, last_seq: int, last_hash: str, last_frame: int) -> tuple[Acked, ...]:
    """The claim a TAIL hint's position makes (none for an empty journal)."""
    if last_seq <= 0:
        return ()
    return (Acked(last_seq, last_hash, TAIL_HINT, segment, last_frame),)


def read_hint(path: Path) -> tuple[Acked, ...]:
    """The claim of the TAIL hint file at ``path`` (none if missing or unreadable)."""
    try:
        p = json.loads(path.read_bytes())["position"]
        return of_hint(int(p["segment"]), int(p["last_seq"]), str(p["last_hash"]),
                       int(p["last_frame"]))  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        return ()


def fork_point(child: str, fork_seq: int, base_hash: str) -> Acked:
    """The claim a forked child makes about its parent: seq ``fork_seq`` has ``base_hash``."""
    return Acked(fork_seq, base_hash, f"fork point of child {child}")


def missing(
    where: str, session: str, head: int, claim: Acked, damage: str
) -> AcknowledgedDataMissingError:
    """The error for a journal that ends at ``head`` before the acknowledged ``claim.seq``.

    ``damage``: what the bytes after ``head`` look like, when something is there.
    """
    seqs = f"seq {head + 1} is" if claim.seq == head + 1 else f"seqs {head + 1}..{claim.seq} are"
    tail = f"; {damage}" if damage else ""
    return AcknowledgedDataMissingError(
        f"{where}: journal ends at seq {head} but seq {claim.seq} was acknowledged "
        f"({claim.source}): {seqs} missing or damaged{tail}",
        hint="restore the session from a backup or export; docs/FORMAT.md "
        "(What damage is detectable)",
        session=session, seq=head + 1, last_seq=head, acked_seq=claim.seq,
        evidence=claim.source, path=where,
    )  # fmt: skip


def differs(where: str, session: str, claim: Acked, found: str) -> AcknowledgedDataMissingError:
    """The error for a record at ``claim.seq`` whose hash is not the acknowledged one."""
    return AcknowledgedDataMissingError(
        f"{where}: seq {claim.seq} has content hash {found[:16] or '(none)'} but "
        f"{claim.source} acknowledged {claim.hash[:16]}: the journal was changed after that "
        "commit",
        hint="restore the session from a backup or export; docs/FORMAT.md "
        "(What damage is detectable)",
        session=session, seq=claim.seq, acked_seq=claim.seq, evidence=claim.source, path=where,
    )  # fmt: skip

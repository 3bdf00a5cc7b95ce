"""What the server's answer to one publish try means for a commit (``Client.publish``).

A try ends with the message's stream sequence, or one of :class:`Try`: the CAS lost to
another message (10071), an answer that may hide our own message (10164, which R3 was
seen to return with no other writer), or no node taking it (no responders, or 503 while
JetStream has no quorum): nothing stored. Any other refusal is UnavailableError. The same
rules whichever client published (``jetstream/lean.py`` or nats-py, ``jetstream/acks.py``).
"""

from __future__ import annotations

import enum

from agentsessions.errors import UnavailableError
from agentsessions.journal.stores.jetstream.acks import Ack

WRONG_LAST_SEQUENCE = 10071  # Nats-Expected-Last-Subject-Sequence did not match
WRONG_LAST_SEQUENCE_R3 = 10164  # the same, as R3 reported it once with no other writer


class Try(enum.Enum):
    """How one publish try ended, when it did not return a sequence."""

    UNKNOWN = "no answer: it may have landed"
    CAS_LOST = "the subject moved: another message is at the expected place"
    NO_LEADER = "no node took it (a leader election): nothing was stored"
    UNREACHED = "no server took a connection: nothing was sent"


def meaning(ack: Ack, subject: str) -> int | Try:
    """What the server's answer ``ack`` to one try on ``subject`` means: a sequence (stored,
    or the duplicate's first), or a :class:`Try`; UnavailableError for any other refusal."""
    if ack.no_responders:
        return Try.NO_LEADER  # no node took the message: a leader election
    if ack.err_code == WRONG_LAST_SEQUENCE:
        return Try.CAS_LOST
    if ack.err_code == WRONG_LAST_SEQUENCE_R3:  # seen on R3 with no other writer
        return Try.UNKNOWN
    if ack.code == 503:  # JetStream is not ready (no quorum yet): nothing stored
        return Try.NO_LEADER
    if ack.code or ack.err_code:
        raise UnavailableError(
            f"JetStream refused a commit on {subject}: code={ack.code} "
            f"err_code={ack.err_code} description={ack.description!r}"
        )
    return ack.seq

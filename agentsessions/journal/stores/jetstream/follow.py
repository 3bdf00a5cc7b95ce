"""Following a JetStream journal subject: read what is stored, then wake on each new message.

The subscription is made BEFORE the stored messages are read, so a commit that lands in
between wakes the follower instead of being missed; a wake-up only says "read again", the
records themselves always come from the stream (in order, by stream sequence).

A core subscription sees a publish as it is sent, before the stream has stored it (on three
replicas, before a quorum has: FACTS.md), so a read right after a wake can miss the very
message that woke it. The wake carries the published head (``"t".last_seq``): while it
announces records not read yet, the follower reads again after short, growing pauses (a
bound: a publish the stream refused, such as a fenced writer's, never lands). It also reads
once every wait slice, in case a wake was lost while the connection moved to another node.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.jetstream import identity, wire
from agentsessions.journal.stores.jetstream.checkpoint import seek
from agentsessions.journal.stores.jetstream.client import Client
from agentsessions.journal.stores.jetstream.crypt import PLAIN, Opener

_WAIT_SLICE = 2.0  # the longest one wait blocks before reading anyway (a lost wake)
_SETTLE = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)  # re-reads after a wake


def follow_subject(
    client: Client,
    subject: str,
    from_seq: int,
    idle_timeout: float | None,
    opener: Opener = PLAIN,
) -> Iterator[Record]:
    """Records of ``subject`` from ``from_seq`` on, then each new one as it commits; stops
    after ``idle_timeout`` seconds without a new record (None = never). ``opener``
    decrypts an encrypted session's messages."""
    sub = client.subscribe(subject)
    try:
        # start at the message holding from_seq, not the subject's first (a flat cost)
        next_seq, after = from_seq, seek(client, subject, from_seq)
        seen = 0  # the journal head of the last message read (evidence, if it goes)
        announced = 0  # the highest seq a wake announced
        settle: Iterator[float] = iter(())
        idle = None if idle_timeout is None else time.monotonic() + idle_timeout
        while True:
            got = False
            for msg in client.messages(subject, after):
                after = msg.stream_seq
                seen = max(seen, wire.head_seq(msg)) if "t" in msg.head else seen
                for record in opener.open(msg, state=False).records:
                    if record.seq >= next_seq:
                        got = True
                        yield record
                        next_seq = record.seq + 1
            if got:
                idle = None if idle_timeout is None else time.monotonic() + idle_timeout
                continue
            if announced >= next_seq:  # woken for records the stream does not show yet
                pause = next(settle, None)
                if pause is not None:
                    time.sleep(pause)
                    continue
            if after and identity.below(client.last(subject), after, seen):
                raise identity.missing(client, subject, "what this follower read", seen, after)
            while True:
                wake = _wait(client, sub, idle)
                if wake is None:
                    return
                announced = _announced(wake)
                if announced >= next_seq or not wake:
                    break  # new records (or a slice passed): read
            settle = iter(_SETTLE)
    finally:
        client.unsubscribe(sub)


def _wait(client: Client, sub: object, idle: float | None) -> bytes | None:
    """The next wake's body; b"" after a wait slice with none; None once the ``idle``
    deadline (monotonic; None: never) has passed."""
    slice_ = _WAIT_SLICE
    if idle is not None:
        slice_ = min(slice_, idle - time.monotonic())
        if slice_ <= 0:
            return None
    got = client.wait(sub, slice_)
    return b"" if got is None else got


def _announced(body: bytes) -> int:
    """The journal's last seq a published message says it brings (0: none or unreadable)."""
    try:
        return int(json.loads(body.partition(b"\n")[0])["t"]["last_seq"])
    except (ValueError, KeyError, TypeError):
        return 0

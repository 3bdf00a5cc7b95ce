"""Following a JetStream journal subject: read what is stored, then wake on each new message.

The subscription is made BEFORE the stored messages are read, so a commit that lands in
between wakes the follower instead of being missed; a wake-up only says "read again", the
records themselves always come from the stream (in order, by stream sequence).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from agentsessions.journal.format.records import Record
from agentsessions.journal.stores import jetstream_identity as identity
from agentsessions.journal.stores import jetstream_wire as wire
from agentsessions.journal.stores.jetstream_checkpoint import seek
from agentsessions.journal.stores.jetstream_client import Client
from agentsessions.journal.stores.jetstream_crypt import PLAIN, Opener

_WAIT_SLICE = 5.0  # how long one wait blocks when the follower has no idle timeout


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
                continue
            if after and identity.below(client.last(subject), after, seen):
                raise identity.missing(client, subject, "what this follower read", seen, after)
            if not _wait(client, sub, idle_timeout):
                return
    finally:
        client.unsubscribe(sub)


def _wait(client: Client, sub: object, idle_timeout: float | None) -> bool:
    if idle_timeout is not None:
        return client.wait(sub, idle_timeout)
    while not client.wait(sub, _WAIT_SLICE):
        time.sleep(0)  # no deadline: wait again
    return True

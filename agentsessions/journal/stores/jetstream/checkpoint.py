"""Tail checkpoints: what opening a writer, ``state`` and ``read`` start from, so their cost
stays flat as a session grows.

Every ``every`` messages on a journal subject, its writer publishes the whole folded tail
(the head, projections, the commit ids remembered, the newest fence, the stream sequence of
the message holding the latest working state) on the subject's checkpoint subject
``P.t.<uid>`` (``P.t.<uid>.<hex>`` for a tool store), saying "the journal messages up to
stream sequence ``at`` fold into this". Those messages never change (the stream denies
delete and purge), so every checkpoint stays true whoever wrote it and whenever it landed;
a missing or late one only means folding a few more messages. A reader takes the subject's
last checkpoint and folds only the messages after it: at most ``every`` plus the fences of
writers opened since. A journal seq (for `read` and `follow`) is found by its message's
head (``"t"``: the last seq once it is in, never decreasing): for a tail, in one batched
read of the messages after the checkpoint (so a tail read costs the same few requests in a
session of any length); before the checkpoint, by bisecting stream sequences.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from agentsessions.errors import UnavailableError
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.jetstream import identity, wire
from agentsessions.journal.stores.jetstream.client import Client, last_and_prior, read_to
from agentsessions.journal.stores.tail import Tail

if TYPE_CHECKING:
    from agentsessions.journal.stores.jetstream.crypt import Opener

CHECKPOINT_EVERY = 64  # journal messages between checkpoints: the bound on what opens fold
TAIL_BYTES = 1 << 20  # what a tail read reads of the messages after the checkpoint, at most


def checkpoint_subject(subject: str) -> str:
    """``P.j.<uid>`` -> ``P.t.<uid>``; ``P.c.<uid>.<hex>`` -> ``P.t.<uid>.<hex>``."""
    prefix, kind, uid = subject.rsplit(".", 2)
    if kind == "j":
        return f"{prefix}.t.{uid}"
    prefix, kind, uid, name = subject.rsplit(".", 3)
    return f"{prefix}.t.{uid}.{name}"


def body(folded: wire.Folded) -> bytes:
    """The checkpoint message of ``folded`` (a subject folded through ``stream_seq``)."""
    head = {
        "k": "t", "at": folded.stream_seq, "tail": folded.tail.to_json(), "f": folded.fence,
        "del": folded.deleted, "ss": folded.state_stream_seq,
    }  # fmt: skip
    return json.dumps(head, separators=(",", ":")).encode() + b"\n"


def load(
    client: Client, subject: str, base: Tail | None = None, opener: Opener | None = None
) -> wire.Folded:
    """``subject`` folded from its last checkpoint (or its start), with the latest working
    state's bytes; ``states`` holds only the versions after the checkpoint. ``opener`` (an
    encrypted session's) decrypts sealed messages; without one they fold from their clear
    heads and summaries, and the state's bytes are left out."""
    ck = client.last(checkpoint_subject(subject))
    start = None
    if ck is not None:
        h = ck.head
        start = wire.Folded(
            tail=Tail.from_json(h["tail"]), fence=int(h["f"]), deleted=bool(h["del"]),
            stream_seq=int(h["at"]), state_stream_seq=int(h["ss"]), checkpoint_seq=ck.stream_seq,
        )  # fmt: skip
    after = start.stream_seq if start is not None else 0
    messages = client.messages(subject, after)
    folded = wire.fold(messages if opener is None else opener.opened(messages), base, start)
    if start is not None and not folded.messages:  # nothing after it: is `at` still there?
        last = client.last(subject)
        if identity.below(last, start.stream_seq, start.tail.last_seq):
            raise identity.missing(
                client, subject, "its tail checkpoint", start.tail.last_seq, start.stream_seq
            )
    if folded.tail.state.version and 0 < folded.state_stream_seq <= after:
        msg = client.at(subject, folded.state_stream_seq)  # the state's bytes: one message
        if msg is not None and opener is not None:
            msg = opener.open(msg)
        if msg is None or msg.state is None or msg.state.version != folded.tail.state.version:
            raise UnavailableError(
                f"{subject}: the working state the checkpoint names is not at stream "
                f"sequence {folded.state_stream_seq}"
            )
        # a sealed state not opened (no opener: a keyless fold) is not the state's bytes
        folded.tail.state = replace(msg.state, data=b"") if msg.sealed else msg.state
    return folded


def publish(client: Client, subject: str, folded: wire.Folded) -> int | None:
    """Publish ``folded`` as the subject's next checkpoint (CAS on the checkpoint subject
    at ``folded.checkpoint_seq``); its stream sequence, or None if it was not written
    (another checkpoint came first, or the server did not answer: it is only a shortcut,
    and the commit it follows has already landed)."""
    try:
        return client.publish(
            checkpoint_subject(subject), body(folded), expect=folded.checkpoint_seq,
            token=wire.msg_id(subject, str(folded.stream_seq)),
        )  # fmt: skip
    except UnavailableError:
        return None


def seek(client: Client, subject: str, from_seq: int) -> int:
    """A stream sequence after which ``subject``'s messages hold every record from journal
    seq ``from_seq`` on (0: from the start): for a tail, found in one batched read of the
    messages after the last checkpoint; before it, by bisecting stream sequences (O(log n)
    messages fetched)."""
    return _locate(client, subject, from_seq, 0).after


def read_from(client: Client, subject: str, from_seq: int, until: int = 0) -> list[wire.Message]:
    """``subject``'s messages holding the records from journal seq ``from_seq`` on (with
    ``until``, none after the first reaching it), in order: a tail in three requests (the
    checkpoint, the subject's last message, one batch of the messages after the checkpoint)."""
    found = _locate(client, subject, from_seq, until)
    if found.done:
        return found.read
    after = found.read[-1].stream_seq if found.read else found.after
    known = wire.head_seq(found.read[-1]) if found.read else from_seq - 1
    last = found.last or client.last(subject)
    if last is None:
        return found.read
    return found.read + read_to(client, subject, after, last, until, known=known)


@dataclass
class _Found:
    after: int  # every record from from_seq on is in the messages after this stream seq
    read: list[wire.Message] = field(default_factory=list)  # those already read, from there
    done: bool = False  # ``read`` reaches the subject's end (or ``until``): read no more
    last: wire.Message | None = None  # the subject's last message, if it was read


def _locate(client: Client, subject: str, from_seq: int, until: int) -> _Found:
    if from_seq <= 1:
        return _Found(0)
    ck, prior = last_and_prior(client, checkpoint_subject(subject))
    if ck is not None and prior and int(ck.head["tail"]["last_seq"]) >= from_seq:
        # a tail the last checkpoint already covers (it came after the commits asked for):
        # the checkpoint before it (its CAS named it) most likely does not
        ck = client.at(checkpoint_subject(subject), prior) or ck
    lo = hi = 0  # every message at or before lo ends before from_seq; the first at or
    # after hi ends at or beyond it (so it, or one before it, holds from_seq)
    if ck is not None and int(ck.head["tail"]["last_seq"]) >= from_seq:
        hi = int(ck.head["at"])  # before the checkpoint: bisect the stream up to it
        return _Found(_bisect(client, subject, from_seq, lo, hi))
    lo = int(ck.head["at"]) if ck is not None else 0  # after it: read the suffix
    last = client.last(subject)
    if last is None or wire.head_seq(last) < from_seq:
        return _Found(lo if last is None else last.stream_seq, done=True)
    # the suffix is at most CHECKPOINT_EVERY messages and the fences since: one batch,
    # unless its commits are large (then bisect what the budget did not reach)
    known = int(ck.head["tail"]["last_seq"]) if ck is not None else 0  # the journal at lo
    got = read_to(client, subject, lo, last, until, TAIL_BYTES, known)
    for i, msg in enumerate(got):
        if wire.head_seq(msg) >= from_seq:
            rest = got[i:]
            end = rest[-1]
            done = end.stream_seq == last.stream_seq or bool(until and wire.head_seq(end) >= until)
            return _Found(msg.stream_seq - 1, rest, done, last)
    lo = got[-1].stream_seq if got else lo
    return _Found(_bisect(client, subject, from_seq, lo, last.stream_seq), last=last)


def _bisect(client: Client, subject: str, from_seq: int, lo: int, hi: int) -> int:
    while hi - lo > 1:
        mid = (lo + hi) // 2
        msg = client.at(subject, mid)
        if msg is not None and wire.head_seq(msg) >= from_seq:
            hi = mid
        else:
            lo = mid if msg is None else max(mid, msg.stream_seq)
    return hi - 1


def records_between(
    client: Client, subject: str, from_seq: int, to_seq: int, opener: Opener
) -> list[Record]:
    """The records ``from_seq..to_seq`` (0: to the end) of ``subject``, read from the
    message holding ``from_seq`` (found through the checkpoint), not from the start."""
    return [
        r
        for msg in read_from(client, subject, from_seq, to_seq if to_seq > 0 else 0)
        for r in opener.open(msg, state=False).records
        if r.seq >= from_seq and (to_seq <= 0 or r.seq <= to_seq)
    ]

"""A JetStream stream's identity, so a stream deleted and recreated is told from the old one.

Numbers must never be reused, but a stream that is deleted and created again under the same
name starts its sequences again, empty: a writer that re-read its head there would number
from 1 over records once acknowledged. So a stream has a **genesis**: the first store to
use it publishes ``P.g`` (a random id, CAS at 0: one wins), and every session's metadata
names it (``"sid"``). What this process has read it keeps, and a store refuses with
:class:`~agentsessions.errors.StreamReplacedError` (exit 8) when the stream contradicts it:

- at connect: a stream whose first sequence is past 1 or that has deleted messages (its
  front was purged, or a message deleted, while its rules allowed it);
- a genesis that differs from, or is missing against, the one found at connect (checked at
  every writer open, and when a session this process asks for is not there);
- a session's metadata naming another stream's genesis;
- a journal subject that ends before what a writer acknowledged, a follower read, or a
  tail checkpoint covers (``jetstream/writer.py``, ``jetstream/follow.py``,
  ``jetstream/checkpoint.py``): evidence that acknowledged messages are gone.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from agentsessions.errors import InvalidArgumentError, StreamReplacedError
from agentsessions.journal.stores.jetstream import shards, wire
from agentsessions.journal.stores.jetstream.client import Client, stream_state

HINT = (
    "the stream was deleted and recreated, or messages were removed from it: restore it "
    "from a backup, or use another stream (?stream=NAME); nothing was written"
)


def genesis_subject(prefix: str) -> str:
    """The subject of the stream's genesis message."""
    return f"{prefix}.g"


def prefix_of(subject: str) -> str:
    """The store prefix of a journal subject (``P.j.<uid>`` or ``P.c.<uid>.<hex>``)."""
    head, kind, _uid = subject.rsplit(".", 2)
    return head if kind == "j" else subject.rsplit(".", 3)[0]


def establish(client: Client, prefix: str) -> str:
    """Check the stream's front and find (or, on its first use, write) its genesis; the id
    is kept on ``client.genesis`` for the checks below, and returned. A deployment spread
    over shards (jetstream/shards.py) has each shard stream checked the same way, its
    genesis id recorded in the home genesis (written after them: whoever wins the home
    genesis names the shard geneses that won), and ``client.shards`` set from it."""
    _check_front(client, client.options.stream)
    subject = genesis_subject(prefix)
    msg = client.last(subject)
    if msg is None:
        asked = client.options.shards or 1
        ids = [_shard_genesis(client, prefix, k, create=True) for k in range(1, asked)]
        body = {"k": "g", "id": secrets.token_hex(16), "time_ns": time.time_ns()}
        if asked > 1:
            body.update(shards=asked, shard_ids=ids)
        _genesis(client, subject, body)
        msg = client.last(subject)
    client.genesis = str(msg.head.get("id", "")) if msg is not None else ""
    head = msg.head if msg is not None else {}
    client.shards = int(head.get("shards", 1))
    client.shard_ids = [str(i) for i in head.get("shard_ids", ())]
    if client.options.shards and client.options.shards != client.shards:
        raise InvalidArgumentError(
            f"the JetStream stream {client.options.stream!r} at {client.options.url} holds a "
            f"deployment of {client.shards} shard(s), fixed when it began; shards="
            f"{client.options.shards} cannot change it",
            hint=f"leave shards= out, or ask for shards={client.shards}", param="store_url",
        )  # fmt: skip
    for k in range(1, client.shards):
        _shard_genesis(client, prefix, k, create=False)
    return client.genesis


def _check_front(client: Client, stream: str, state: Any = None) -> None:
    """Refuse a stream whose front was purged or that has a message deleted (``state``:
    the stream's, if already read)."""
    state = state if state is not None else stream_state(client, stream)
    if int(state.first_seq or 0) > 1 or int(state.num_deleted or 0) > 0:
        raise StreamReplacedError(
            f"the JetStream stream {stream!r} at {client.options.url} has lost messages "
            f"(its first sequence is {state.first_seq}, {state.num_deleted or 0} deleted): "
            "acknowledged commits may be missing; refusing to use it",
            hint=HINT, stream=stream,
        )  # fmt: skip


def _genesis(client: Client, subject: str, body: dict[str, object]) -> None:
    line = json.dumps(body, separators=(",", ":")).encode() + b"\n"
    client.publish(subject, line, expect=0, token=str(body["id"]))  # None: another won


def _shard_genesis(client: Client, prefix: str, k: int, *, create: bool) -> str:
    """Shard ``k``'s stream found (``create``: made, with a genesis of its own, as a new
    deployment begins) and checked: its front, and its genesis against the home genesis's
    record of it. Its id."""
    _check_front(client, shards.shard_stream(client.options.stream, k), client.ensure_shard(k))
    shard = shards.shard_prefix(prefix, k)
    if create:
        _genesis(client, genesis_subject(shard), {"k": "g", "id": secrets.token_hex(16)})
    found = current(client, shard)
    if not create and found != expected(client, shard):
        raise replaced(client, found, shard)
    return found


def current(client: Client, prefix: str) -> str:
    """The stream's genesis id now ("" if it has none)."""
    msg = client.last(genesis_subject(prefix))
    return str(msg.head.get("id", "")) if msg is not None else ""


def expected(client: Client, prefix: str) -> str:
    """The genesis id the stream of ``prefix`` (the home prefix or a shard's) must have."""
    k = shards.shard_index(client.options.prefix, prefix)
    if k == 0:
        return client.genesis
    return client.shard_ids[k - 1] if k <= len(client.shard_ids) else ""


def check(client: Client, prefix: str) -> None:
    """Refuse a stream whose genesis is not the one this connection found (one read);
    ``prefix`` a shard's: its stream (jetstream/shards.py)."""
    found = current(client, prefix)
    if found != expected(client, prefix):
        raise replaced(client, found, prefix)


def replaced(client: Client, found: str, prefix: str = "") -> StreamReplacedError:
    """The error for a stream (the home stream, or ``prefix``'s shard) whose genesis is
    now ``found``."""
    stream = client.stream_for(prefix) if prefix else client.options.stream
    was = expected(client, prefix) if prefix else client.genesis
    now = f"now {found[:12]}" if found else "it has none now"
    return StreamReplacedError(
        f"the JetStream stream {stream!r} at {client.options.url} was replaced: its "
        f"identity was {was[:12]} when this process connected, {now}; refusing "
        "to read or write what it holds as this store's sessions",
        hint=HINT, stream=stream, expected=was, found=found,
    )  # fmt: skip


def check_session(client: Client, uid: str, named: str) -> None:
    """Refuse a session whose metadata names another stream's genesis (``named`` "": one
    created before streams had one)."""
    if named and named != client.genesis:
        raise StreamReplacedError(
            f"session {uid} belongs to stream identity {named[:12]}, but the stream "
            f"{client.options.stream!r} is {client.genesis[:12]}: its messages were copied "
            "from another stream, or the stream was replaced",
            hint=HINT, session=uid, stream=client.options.stream, expected=client.genesis,
            found=named,
        )  # fmt: skip


def below(last: wire.Message | None, stream_seq: int, seq: int) -> bool:
    """True when a subject whose last message is ``last`` ends before stream sequence
    ``stream_seq`` or journal seq ``seq``, both of which were seen on it."""
    if stream_seq <= 0 and seq <= 0:
        return False
    if last is None or last.stream_seq < stream_seq:
        return True
    return "t" in last.head and wire.head_seq(last) < seq


def missing(client: Client, subject: str, what: str, seq: int, stream_seq: int) -> Exception:
    """The error for ``subject`` ending before ``what`` (journal seq ``seq``, stream
    sequence ``stream_seq``) that this process holds as acknowledged."""
    prefix = prefix_of(subject)
    found = current(client, prefix)
    if found != expected(client, prefix):
        return replaced(client, found, prefix)
    return StreamReplacedError(
        f"{subject} in the JetStream stream {client.options.stream!r} ends before {what} "
        f"(seq {seq}, stream sequence {stream_seq}): acknowledged messages are missing; "
        "refusing to go on (numbers would be reused)",
        hint=HINT, stream=client.options.stream, acked_seq=seq, evidence=what,
    )  # fmt: skip

"""``list`` on the JetStream store in a fixed number of round trips, whatever the count.

A page needs every session's metadata (to order by creation time and keep one project) and
the journal head of the rows it shows. Both come from batched direct gets (``multi_last``):
the last message of every ``P.m.*`` subject in one request, then the last message of each
shown row's journal subject in one more. Past the server's batch limit (1,024 subjects on
nats-server 2.15) the metadata is asked for in chunks of named subjects, so a store of ``n``
sessions costs ``2 + n // 1000`` round trips instead of ``n + page size``.

A direct get may be answered by any replica of an R3 stream, so a row may lag a commit
that was acknowledged a moment ago (``get`` reads the leader). A metadata message that does
not decode is not listed and reported as ``unindexed`` (as the file store's damaged
``session.json``), instead of failing the whole listing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentsessions.errors import JournalCorruptError, MetadataCorruptError
from agentsessions.journal.stores import metafile
from agentsessions.journal.stores.jetstream import wire
from agentsessions.journal.stores.jetstream.client import Client, TooManyResults, last_many
from agentsessions.journal.stores.store import SessionMeta

CHUNK = 1000  # named subjects per batched read: under the server's 1,024


Row = tuple[SessionMeta, bool, int]  # the metadata, deleted, its update time


def _lasts(client: Client, subjects: Iterable[str]) -> dict[str, tuple[int, bytes]]:
    names = list(subjects)
    out: dict[str, tuple[int, bytes]] = {}
    for at in range(0, len(names), CHUNK):
        out.update(last_many(client, names[at : at + CHUNK]))
    return out


def all_metas(client: Client, prefix: str) -> tuple[list[Row], list[MetadataCorruptError]]:
    """Every session's metadata row, and the errors of those that do not decode."""
    pattern = f"{prefix}.m.*"
    try:
        got = last_many(client, [pattern])
    except TooManyResults:
        got = _lasts(client, sorted(client.subjects(pattern)))
    rows, damaged = [], []
    for subject, (seq, data) in sorted(got.items()):
        uid = subject.rsplit(".", 1)[1]
        try:
            head = wire.decode(data, seq, subject).head
            named = str(head.get("sid", ""))
            if named and named != client.genesis:
                raise ValueError(f"it names stream identity {named[:12]}, not this stream's")
            meta = checked_meta(head.get("meta"), uid, seq, subject)
            rows.append((meta, bool(head.get("del")), int(head.get("ut", 0))))
        except MetadataCorruptError as exc:
            damaged.append(exc)
        except (JournalCorruptError, KeyError, TypeError, ValueError) as exc:
            damaged.append(
                MetadataCorruptError(
                    f"session {uid}: its metadata (stream sequence {seq} on {subject}) is "
                    f"damaged: {exc}",
                    session=uid,
                    problem=str(exc),
                )
            )
    return rows, damaged


def checked_meta(obj: Any, uid: str, seq: int, subject: str) -> SessionMeta:
    """The metadata a meta message holds, checked as ``session.json`` is (its field sums,
    strict shape: :func:`.metafile.check_object`); MetadataCorruptError (exit 8) naming the
    message and the field if not. A message from before the sums has none: it is read, and
    the session's next metadata write (a delete) carries them."""
    problem = metafile.check_object(obj, uid)
    if problem is not None:
        raise MetadataCorruptError(
            f"session {uid}: its metadata (stream sequence {seq} on {subject}) {problem.text}",
            hint="'agentsessions verify --all' lists every damaged session",
            session=uid,
            problem=f"metadata {problem.text}",
            field=problem.field,
        )
    return SessionMeta.from_json(obj)


def journal_heads(client: Client, subjects: list[str]) -> dict[str, wire.Message]:
    """The last message of each journal subject in ``subjects`` that has one."""
    return {
        subject: wire.decode(data, seq, subject)
        for subject, (seq, data) in _lasts(client, subjects).items()
    }

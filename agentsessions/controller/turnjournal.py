"""The journal a live turn records into: its writer, with the sync discipline of a turn.

Each effect is its own commit at the head the turn last saw (CAS); commits made with
``sync=False`` wait for the next sync, and a caller (``on_record``) hears of a record only
once it is durable. The harness's working state is a state-only commit after what is
pending, covered by the same next sync (spec decision 11 and issue 9 item 6).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import agentsessions.telemetry as telemetry
from agentsessions.errors import InvalidArgumentError
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.store import StateUpdate, Writer
from agentsessions.v1 import model

from .spi import HarnessDescriptor, Message


class WriterJournal:
    """Appends each effect as its own commit at the head it last saw (CAS).

    A commit made with ``sync=False`` waits for the next sync (spec decision 11: the sink
    flushes before anything leaves the process, and END is synced): ``on_record`` hears of
    it only then, so a caller is told of a record only once it is durable, in order.
    """

    def __init__(self, writer: Writer, on_record: Callable[[Record], None] | None) -> None:
        self.writer = writer
        self.on_record = on_record
        self._unsynced: list[Record] = []
        self._dirty = False  # a commit (with or without records) waits for a sync

    def record(
        self,
        events: Sequence[Mapping[str, Any]],
        expected: int | None = None,
        *,
        sync: bool = True,
        commit_id: str | None = None,
    ) -> Record:
        head = self.writer.head[0] if expected is None else expected
        with telemetry.current().commit(self.writer.uid, len(events)) as span:
            result = self.writer.append(
                events, expected_last_seq=head, sync=sync, commit_id=commit_id
            )
            span.set("agentsessions.seq", result.records[-1].seq)
        self._unsynced.extend(result.records)
        self._dirty = not sync
        if sync:
            self._acknowledged()
        return result.records[-1]

    def commit_state(
        self,
        data: bytes,
        *,
        covers_to: int,
        expected_version: int | None,
        commit_id: str,
        author: str,
    ) -> int:
        """A state-only commit after what is pending; the next sync covers both, and
        recovery keeps a prefix of commits, so the state never outlives entries before it."""
        update = StateUpdate(data, covers_from=1, covers_to=covers_to, author=author)
        result = self.writer.append(
            (),
            expected_last_seq=self.writer.head[0],
            commit_id=commit_id,
            sync=False,
            state=update,
            expected_state_version=expected_version,
        )
        self._dirty = self._dirty or not result.duplicate
        return result.state_version

    def flush(self) -> None:
        """Make the commits made with ``sync=False`` durable (one sync), then report them."""
        if self._unsynced or self._dirty:
            self.writer.sync()
            self._acknowledged()

    def _acknowledged(self) -> None:
        self._dirty = False
        records, self._unsynced = self._unsynced, []
        if self.on_record is not None:
            for record in records:
                self.on_record(record)


def first_commit(
    exec_id: str,
    name: str,
    descriptor: HarnessDescriptor,
    inputs: Sequence[Message],
    config: bytes,
    actors: Sequence[Mapping[str, str]] = (),
) -> list[model.Event]:
    """A turn's first commit (the CAS point): EXECUTION_START and one INPUT per message,
    each with its author as the event's ``actor`` (``actors``: one per input, ``{}`` for
    none, or empty when no input has one; an INPUT without one has no ``actor`` field, so
    its bytes and hash are what they were before authors existed)."""
    start_event = model.execution_start(
        input_count=len(inputs),
        config=config,
        harness=name,
        harness_version=descriptor.version,
        execution_id=exec_id,
    )
    authors = actors or ({},) * len(inputs)
    return [start_event] + [
        model.input_event(cast(model.Message, as_user(m)), execution_id=exec_id, actor=who)
        for m, who in zip(inputs, authors, strict=True)
    ]


def as_user(message: Message) -> Message:
    """Inputs are user messages unless they say otherwise."""
    if not isinstance(message, dict) or "parts" not in message:
        raise InvalidArgumentError("an input must be an agentsessions.v1 Message with parts")
    return message if message.get("role") else {**message, "role": "user"}

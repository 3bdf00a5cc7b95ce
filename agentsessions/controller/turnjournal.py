"""The journal a live turn records into: its writer, with the sync discipline of a turn.

Each effect is its own commit at the head the turn last saw (CAS); commits made with
``sync=False`` wait for the next sync, and a caller (``on_record``) hears of a record only
once it is durable. The harness's working state is a state-only commit after what is
pending, covered by the same next sync (spec decision 11 and issue 9 item 6).

The turn's durability mode (:data:`~agentsessions.v1.turn.DURABILITY_MODES`) is decided
here, in the two places it differs: whether the turn's first commit (START and its INPUTs)
is synced at once (:meth:`WriterJournal.begin`), and whether what a model call is sent is
synced before the call (:meth:`WriterJournal.before_call`). In ``step`` mode both are; in
``turn`` mode neither is, so a turn that calls no tool makes one sync, with its END. Every
other sync is the same in both modes: a tool call's intent is synced before its executor
runs, an approval request before the turn parks, END and ERROR before the turn returns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import agentsessions.telemetry as telemetry
from agentsessions.errors import CommitTooLargeError, InvalidArgumentError
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.store import StateUpdate, Writer
from agentsessions.v1 import construct, model
from agentsessions.v1.turn import DURABILITY_STEP, DURABILITY_TURN

from .spi import REQUIRES_MEMORY_SNAPSHOT as REQUIRES_MEMORY
from .spi import HarnessDescriptor, Message


class WriterJournal:
    """Appends each effect as its own commit at the head it last saw (CAS).

    A commit made with ``sync=False`` waits for the next sync (spec decision 11: the sink
    flushes before anything leaves the process, and END is synced): ``on_record`` hears of
    it only then, so a caller is told of a record only once it is durable, in order.

    In ``turn`` mode (``per_turn``) what would be such a commit is *held* instead (the
    turn's first commit, its model calls and answers, its usage): nothing reaches the store
    until the next synced commit (a tool call's intent, END, ERROR, a cancel), which lands
    the held events and its own as ONE commit (split back into the commits they were made
    as only if together they exceed the store's commit limit, which refuses a commit whole),
    at the head the turn began at, with the turn's commit id. A crash before it leaves
    nothing of the turn.
    """

    def __init__(
        self,
        writer: Writer,
        on_record: Callable[[Record], None] | None,
        durability: str = DURABILITY_STEP,
    ) -> None:
        self.writer = writer
        self.on_record = on_record
        self.per_turn = durability == DURABILITY_TURN  # one sync, at the turn's end
        self._unsynced: list[Record] = []
        self._dirty = False  # a commit (with or without records) waits for a sync
        self._held: list[list[Mapping[str, Any]]] = []  # turn mode: commits not yet made
        self._held_at: int | None = None  # the head the held first commit expects
        self._held_id: str | None = None  # and the commit id it carries

    def begin(
        self, events: Sequence[Mapping[str, Any]], expected: int, commit_id: str | None
    ) -> None:
        """The turn's first commit (the CAS point, with the turn's commit id): durable at
        once in ``step`` mode (the turn has begun, for its caller and for resume); held for
        the turn's one sync in ``turn`` mode."""
        if not self.per_turn:
            self.record(events, expected, commit_id=commit_id)
            return
        self._held.append(list(events))
        self._held_at, self._held_id = expected, commit_id

    def defer(self, events: Sequence[Mapping[str, Any]]) -> None:
        """Commit ``events`` with the turn's next sync: landed now unsynced (``step``), or
        held and landed with it (``turn``)."""
        if self.per_turn:
            self._held.append(list(events))
        else:
            self.record(events, sync=False)

    def before_call(self) -> None:
        """Before a model call: in ``step`` mode what the call is sent becomes durable
        before it leaves the process; in ``turn`` mode it waits for the turn's END (a crash
        loses the unacknowledged turn, which its caller retries)."""
        if not self.per_turn:
            self.flush()

    def record(
        self,
        events: Sequence[Mapping[str, Any]],
        expected: int | None = None,
        *,
        sync: bool = True,
        commit_id: str | None = None,
    ) -> Record:
        """Commit ``events`` (after whatever is held, in the same commit) at ``expected``
        (None: the head), synced unless ``sync`` is False; the last record."""
        if not self._held:
            return self._append(events, expected, sync, commit_id)
        groups, at, cid = self._take_held()
        try:
            return self._append([e for g in groups for e in g] + list(events), at, sync, cid)
        except CommitTooLargeError:  # refused whole, nothing written: as the commits they were
            for group in groups:
                self._append(group, at, False, cid)
                at, cid = None, None
            return self._append(events, expected, sync, commit_id)

    def _take_held(self) -> tuple[list[list[Mapping[str, Any]]], int | None, str | None]:
        """The held commits, the head the first expects and the commit id it carries."""
        held = (self._held, self._held_at, self._held_id)
        self._held, self._held_at, self._held_id = [], None, None
        return held

    def _append(
        self,
        events: Sequence[Mapping[str, Any]],
        expected: int | None,
        sync: bool,
        commit_id: str | None,
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
        """A state-only commit after what is pending (what is held lands first, unsynced);
        the next sync covers both, and recovery keeps a prefix of commits, so the state
        never outlives entries before it."""
        if self._held:
            self.record((), sync=False)
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
        """Make what waits for a sync durable (one sync), then report it."""
        if self._held:
            self.record(())
        elif self._unsynced or self._dirty:
            self.writer.sync()
            self._acknowledged()

    def _acknowledged(self) -> None:
        self._dirty = False
        records, self._unsynced = self._unsynced, []
        if self.on_record is not None:
            for record in records:
                self.on_record(record)


def durability_of(chosen: str, descriptor: HarnessDescriptor) -> str:
    """The durability mode a turn runs in: the one ``chosen`` (``step`` if none), except
    that a harness whose memory is its state (REQUIRES_MEMORY_SNAPSHOT) always runs in
    ``step`` mode: its live memory takes each input as it is sent, so an input lost from
    the journal by a crash would leave memory and journal apart for good."""
    if chosen != DURABILITY_TURN or descriptor.capabilities.resumability == REQUIRES_MEMORY:
        return DURABILITY_STEP
    return DURABILITY_TURN


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
    start_event = construct.execution_start(
        input_count=len(inputs),
        config=config,
        harness=name,
        harness_version=descriptor.version,
        execution_id=exec_id,
    )
    authors = actors or ({},) * len(inputs)
    return [start_event] + [
        construct.input_event(cast(model.Message, as_user(m)), execution_id=exec_id, actor=who)
        for m, who in zip(inputs, authors, strict=True)
    ]


def as_user(message: Message) -> Message:
    """Inputs are user messages unless they say otherwise."""
    if not isinstance(message, dict) or "parts" not in message:
        raise InvalidArgumentError("an input must be an agentsessions.v1 Message with parts")
    return message if message.get("role") else {**message, "role": "user"}

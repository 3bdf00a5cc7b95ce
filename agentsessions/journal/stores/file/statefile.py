"""Where a file store finds a session's working state: the STATE frame its tail names.

The tail state (the TAIL hint, or the SEAL carry of the last sealed segment, folded over
the frames committed after it) names the latest STATE frame by position: (segment, offset,
seq). Opening a writer reads that one frame (one small read of a ``.seg``, or the one chunk
of a ``.seg.zst`` that holds it), so the cost does not grow with the session's history;
each STATE record names its predecessor the same way, so the state an execution started
with is found by stepping back over the state commits since then, never by a scan
(``docs/FORMAT.md`` section 6a has why the state is not copied forward at rotation).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from agentsessions.errors import AcknowledgedDataMissingError, FormatError, JournalCorruptError
from agentsessions.journal.format import staterecord
from agentsessions.journal.format.segment import RTYPE_STATE
from agentsessions.journal.format.segmentlog import SegmentLog
from agentsessions.journal.stores.file.writer import working_state
from agentsessions.journal.stores.store import WorkingState
from agentsessions.journal.stores.tail import Tail
from agentsessions.valueclass import replace

_HINT = "run `agentsessions verify` on the session"

StateOpener = Callable[[staterecord.StateRecord], bytes]
"""The plaintext data of a STATE record (an encrypted store's cipher opens its sealed blob;
None: the data is stored in the clear)."""


def _data(record: staterecord.StateRecord, opener: StateOpener | None) -> bytes:
    return record.data if opener is None else opener(record)


def record_at(log: SegmentLog, where: staterecord.Where) -> staterecord.StateRecord:
    """The STATE record at ``where``; JournalCorruptError when it is not there intact."""
    first, offset, seq = where
    frame = log.frame_at(first, offset, seq, RTYPE_STATE)
    try:
        if frame is None:
            raise FormatError("no intact STATE frame there")
        record = staterecord.decode(frame.payload)
        if record.chain_seq != seq - 1:
            raise FormatError("the STATE frame is bound to another position")
    except FormatError as exc:
        raise JournalCorruptError(
            f"{log.journal_dir}: the working state's frame (segment {first:016x}, offset "
            f"{offset}, seq {seq}) is damaged or missing: {exc}",
            hint=_HINT, path=str(log.journal_dir), offset=offset, seq=seq, reason=str(exc),
        ) from None  # fmt: skip
    return record


def load(log: SegmentLog, tail: Tail, opener: StateOpener | None = None) -> None:
    """Give ``tail.state`` its bytes (read from the frame the tail names, opened by
    ``opener`` when sealed), once."""
    state = tail.state
    if not state.version or (state.data or not tail.state_size):
        return
    if tail.state_at is None:
        raise _lost(log, "the tail names a working state but not its frame")
    record = record_at(log, tail.state_at)
    if record.version != state.version:
        raise _lost(log, f"its frame holds version {record.version}, not {state.version}")
    data = _data(record, opener)
    if len(data) != tail.state_size:
        raise _lost(log, f"its frame holds {len(data)} bytes, not {tail.state_size}")
    tail.state = replace(state, data=data)


def before(
    log: SegmentLog, tail: Tail, before_seq: int, opener: StateOpener | None = None
) -> WorkingState:
    """The working state as it stood before seq ``before_seq`` was written: step back from
    the latest STATE record over those committed at or after that seq."""
    where = tail.state_at
    while where is not None:
        record = record_at(log, where)
        if record.chain_seq < before_seq:
            return replace(working_state(record), data=_data(record, opener))
        where = record.prev
    return WorkingState()


def states(
    log: SegmentLog, opener: StateOpener | None = None
) -> Iterator[tuple[int, WorkingState]]:
    """``(chain_seq, state)`` of every STATE frame of ``log`` in order (closed after)."""
    try:
        for frame in log.frames():
            if frame.rtype == RTYPE_STATE:
                record = staterecord.decode(frame.payload)  # frames() checked its binding
                state = working_state(record)
                yield record.chain_seq, replace(state, data=_data(record, opener))
    finally:
        log.close()


def check_acked(log: SegmentLog, hinted: Tail | None, found: Tail) -> None:
    """Refuse a journal whose working state is older than the one the TAIL hint (written
    only after the commits it names were synced) says was acknowledged."""
    if hinted is not None and hinted.state.version > found.state.version:
        raise AcknowledgedDataMissingError(
            f"{log.journal_dir}: working state version {hinted.state.version} was acknowledged "
            f"(TAIL hint) but the journal holds version {found.state.version}",
            hint=_HINT, path=str(log.journal_dir),
        )  # fmt: skip


def _lost(log: SegmentLog, why: str) -> JournalCorruptError:
    return JournalCorruptError(
        f"{log.journal_dir}: the working state cannot be read: {why}",
        hint=_HINT,
        path=str(log.journal_dir),
    )

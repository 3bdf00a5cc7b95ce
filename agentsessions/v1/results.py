"""The values the ``Sessions`` API returns that the layers below it build.

Each is the Python face of an ``agentsessions.v1`` message of the same name (docs/WIRE.md):
``ApprovalRef``, ``UnresolvedCall``, ``ToolStoreEntry``, ``VerifyReport`` and
``ReplayReport``. They are defined here, below every layer, so the controller and the
journal build them once and the engine, the wire, the client and the CLI hand the same
objects on: no layer copies one into a look-alike of its own. (:mod:`agentsessions.v1.model`
types every message's proto3-JSON form under the message's own name, as an event body
carries it: ``model.ApprovalRef`` is the dict of an EVENT_PARKED body, this ``ApprovalRef``
the value the API returns; both are the one message.)

Plain values: none holds a file, a lock or a store, so they cross threads and the wire.
:class:`VerifyReport` is the one that is built up (a walk fails it at the first bad record);
it is handed out once the walk is done.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentsessions.errors import (
    ChainBrokenError,
    FormatError,
    JournalCorruptError,
    StorageError,
)
from agentsessions.valueclass import field, value

__all__ = ["ApprovalRef", "ReplayReport", "ToolStoreEntry", "UnresolvedCall", "VerifyReport"]


@value(frozen=True)
class ApprovalRef:
    """Which approval request a decision names (the reference's ApprovalRef)."""

    execution_id: str
    tool_call_id: str
    request_seq: int

    def to_json(self) -> dict[str, Any]:
        """The ``pending_approval`` object of ``get --json``."""
        return {
            "execution_id": self.execution_id,
            "tool_call_id": self.tool_call_id,
            "request_seq": self.request_seq,
        }


@value(frozen=True)
class UnresolvedCall:
    """A tool call whose outcome is unknown after a crash, waiting for a person."""

    execution_id: str
    tool_call_id: str
    tool: str
    idempotency_key: str
    call_seq: int

    def to_json(self) -> dict[str, Any]:
        """The ``unresolved_call`` object of ``get --json``."""
        return {
            "execution_id": self.execution_id,
            "tool_call_id": self.tool_call_id,
            "tool": self.tool,
            "idempotency_key": self.idempotency_key,
            "call_seq": self.call_seq,
        }


@value(frozen=True)
class ToolStoreEntry:
    """One entry of a tool's own store: its seq, the author and time the host stamped on
    it, and the JSON object the tool committed."""

    seq: int
    author: str
    time_ns: int
    data: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The entry as ``agentsessions store --json`` prints it (one object a line)."""
        return {"seq": self.seq, "author": self.author, "time_ns": self.time_ns,
                "data": dict(self.data)}  # fmt: skip


_EXIT_BY_KIND = {
    "chain": ChainBrokenError.exit_code,
    "corrupt": JournalCorruptError.exit_code,
    "format": FormatError.exit_code,
    "storage": StorageError.exit_code,
}


@value
class VerifyReport:
    """The outcome of verifying one journal; ``ok`` is False at the first bad record."""

    source: str
    uid: str = ""
    records: int = 0
    last_seq: int = 0
    last_hash: str = ""
    first_bad_seq: int | None = None
    reason: str = ""
    torn_tail: bool = False
    strict: bool = False
    expected_last_seq: int | None = None
    expected_last_hash: str | None = None
    notes: list[str] = field(default_factory=list)
    kind: str = ""  # "chain", "corrupt" or "format" once failed
    torn_detail: str = field(default="", repr=False)  # where and why the torn tail starts
    components: list[tuple[str, VerifyReport]] = field(default_factory=list)  # tool stores

    @property
    def exit_code(self) -> int:
        """The CLI exit status this outcome maps to (0 when ok)."""
        if self.ok:
            return 0
        return _EXIT_BY_KIND.get(self.kind, ChainBrokenError.exit_code)

    @property
    def ok(self) -> bool:
        return self.first_bad_seq is None and not self.reason

    def fail(self, seq: int, reason: str, kind: str = "chain") -> VerifyReport:
        """Record the first failure: its seq, why, and its class (chain, corrupt, format)."""
        self.first_bad_seq, self.reason, self.kind = seq, reason, kind
        return self

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "source": self.source,
            "uid": self.uid,
            "records": self.records,
            "last_seq": self.last_seq,
            "last_hash": self.last_hash,
            "first_bad_seq": self.first_bad_seq,
            "reason": self.reason,
            "torn_tail": self.torn_tail,
            "strict": self.strict,
            "notes": list(self.notes),
            "kind": self.kind,
            "components": [{"component": n, **r.to_json()} for n, r in self.components],
        }

    def add_component(self, name: str, part: VerifyReport) -> None:
        """Keep the report of the session's component (tool) store ``name``; the first one
        that fails fails this report too (its reason names the store; the session's own
        chain fields stay as they were)."""
        self.components.append((name, part))
        if self.ok and not part.ok:
            where = f" at seq {part.first_bad_seq}" if part.first_bad_seq is not None else ""
            self.reason = f"tool store {name!r} does not verify{where}: {part.reason}"
            self.kind = part.kind or "chain"


@value(frozen=True)
class ReplayReport:
    """What ``rerun`` reproduced (``identical`` is the proof)."""

    uid: str
    harness: str
    executions: int
    replayed: int
    model_calls: int
    identical: bool
    outputs: tuple[str, ...] = ()
    divergence: str = ""  # the first divergence, "" when none
    diverged_execution: str = ""
    last_seq: int = 0

    def to_json(self) -> dict[str, Any]:
        """The ``replay --rerun --json`` object."""
        return {
            "uid": self.uid,
            "harness": self.harness,
            "executions": self.executions,
            "replayed": self.replayed,
            "model_calls": self.model_calls,
            "identical": self.identical,
            "outputs": list(self.outputs),
            "divergence": self.divergence,
            "diverged_execution": self.diverged_execution,
            "last_seq": self.last_seq,
        }

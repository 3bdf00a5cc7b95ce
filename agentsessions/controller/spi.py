"""The seams of the controller: Harness, ModelProvider and Runtime, each a small Protocol.

Messages, events and usage are the ``agentsessions.v1`` proto3-JSON dicts of
:mod:`agentsessions.v1.model`, the same form the journal hashes, so nothing is
converted between a harness, the journal and the wire.

Rules every implementation keeps:

- A harness is driven by :meth:`Harness.run` and reaches the world only through its
  :class:`Sink`: each model call, output, reported tool result and usage goes through the
  sink, which records it in the journal *before* the harness observes its result. A
  harness never calls a model provider itself, and it never names a session: the
  controller binds it to one.
- A model provider answers one request with one completion; streaming deltas may reach the
  terminal through ``on_delta`` but are never journaled.
- A tool executor runs one CONTROLLER_MEDIATED call the host hands it (``sink.tool``): the
  host has made the call's intent durable first and records its outcome after. Its dedup
  namespace is (session uid, idempotency key), never the key alone.
- A runtime hosts harness compute. ``can_place`` refuses a harness that needs memory
  snapshots on a runtime that cannot take them, before any compute or journal change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from agentsessions.valueclass import field, value

if TYPE_CHECKING:
    from agentsessions.journal.stores.store import CommitResult

from agentsessions.journal.stores.store import WorkingState
from agentsessions.v1.results import ToolStoreEntry

Event = dict[str, Any]
Message = dict[str, Any]

STATELESS_REPLAY = "RESUMABILITY_STATELESS_REPLAY"
CONTROLLER_MEDIATED = "MEDIATION_CONTROLLER_MEDIATED"
REQUIRES_MEMORY_SNAPSHOT = "RESUMABILITY_REQUIRES_MEMORY_SNAPSHOT"


@value(frozen=True)
class Capabilities:
    """What a harness needs from its host (``agentsessions.v1.Capabilities``)."""

    resumability: str = STATELESS_REPLAY
    fork_safe: bool = True
    requires_gpu: bool = False
    streaming: bool = False
    reasoning_replay: bool = False
    working_state: bool = False
    """Not part of the reference's message (never journaled): the harness keeps all it needs
    in its working state (``Start.state``, ``Sink.state``), so a REQUIRES_MEMORY_SNAPSHOT
    harness whose live compute is gone continues on a fresh one from that state."""
    uses_session_model: bool | None = None
    """Whether the harness calls the session's model, the one ``--model`` chooses: True (chat),
    False (it calls no model, or only a fixed one of its own: echo, counter, memory), None
    (not declared: a plugin or remote harness that predates the field). A turn that names a
    model for a False harness is refused (the user would believe they talked to it); None is
    let through, since refusing would break every harness that never heard of the field."""


@value(frozen=True)
class ToolSpec:
    """A tool a harness may call, with its mediation tier and its arguments' JSON Schema.

    In ``Start.tools`` these are the tools of the session's workload, as the host bound them:
    ``mediation`` is the tier the workload gives the tool, which the harness sets on its copy
    of each call it hands to ``sink.tool``."""

    name: str
    description: str = ""
    mediation: str = "MEDIATION_CONTROLLER_MEDIATED"
    input_schema: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def definition(self) -> dict[str, Any]:
        """The ``ToolDefinition`` offered to a model (``ModelRequest.tools``)."""
        out: dict[str, Any] = {"name": self.name}
        if self.description:
            out["description"] = self.description
        if self.input_schema:
            out["input_schema"] = dict(self.input_schema)
        return out


@value(frozen=True)
class HarnessDescriptor:
    """Identity and needs of a harness (``agentsessions.v1.HarnessDescriptor``).

    ``version`` is an opaque replay-compatibility version: replay refuses a journal
    recorded by another version ("" means unknown and is not checked).
    """

    id: str
    version: str = ""
    models: tuple[str, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    capabilities: Capabilities = field(default_factory=Capabilities)


class History(Protocol):
    """The events before an execution, handed over lazily.

    Reading is on demand and from the tail, so a turn's cost does not grow with the
    session unless the harness itself chooses to read everything. The events are read-only:
    a history may hand the same dicts to later executions (a held writer decodes each
    recent record once; replay shares one list), so a harness copies what it changes.
    """

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Event]: ...

    def tail(self, count: int) -> list[Event]:
        """The last ``count`` events (fewer if the history is shorter), oldest first."""
        ...


class Lineage(Protocol):
    """Where a live execution's history sits in its session's journal: the session, the
    writer's fence and the chain hash of a record. A remote harness's node keeps the history
    it was sent under these, so the next Start sends only what is new
    (:mod:`agentsessions.wire.historysync`); a held writer is one."""

    @property
    def uid(self) -> str: ...

    @property
    def fence(self) -> int: ...

    def hash_at(self, seq: int) -> str:
        """The chain hash of record ``seq`` ("" when the journal has none there)."""
        ...


@value(frozen=True)
class Start:
    """Everything one execution gets (``agentsessions.v1.Start``)."""

    execution_id: str
    config: bytes
    inputs: tuple[Message, ...]
    history: History
    resume_from_seq: int = 0
    memory_restored: bool = False  # I4: a restored harness must not rebuild from history
    state: WorkingState = field(default_factory=WorkingState)
    """The harness's working state at this run's start (version 0: none yet). A resumed or
    replayed run gets the state its live run started with, not a later one."""
    tools: tuple[ToolSpec, ...] = ()
    """The tools of the workload (``--tools FILE``) this execution runs with, bound by the
    host: live, resumed and replayed runs of one execution get the same ones, whatever
    ``--tools`` came later (its EXECUTION_START names the workload; see :class:`Workloads`)."""
    lineage: Lineage | None = None
    """Where ``history`` sits in the journal (its records ``1..len(history)``): set on live
    and resumed runs, a :class:`~agentsessions.controller.replay.ReplayLineage` on a streamed
    replay (under the session's rerun key), None on a v0.1.2 journal's replay. Only a remote
    harness's proxy reads it."""


@value(frozen=True)
class ModelRequest:
    """One model call as the harness asks for it; hashed for the I0 check."""

    model: str
    messages: tuple[Message, ...]
    params: Mapping[str, str] | None = None
    tools: tuple[dict[str, Any], ...] = ()
    tool_choice: dict[str, Any] | None = None


@value(frozen=True)
class Completion:
    """A model's answer: the assistant message and, if known, its usage."""

    message: Message
    usage: dict[str, Any] | None = None


class Sink(Protocol):
    """Where a running harness sends every nondeterministic effect (recorded first)."""

    def model(self, request: ModelRequest) -> Completion:
        """Record MODEL_CALL, get the completion (live, or served from the journal), record
        OUTPUT, and return it."""
        ...

    def output(self, message: Message) -> None:
        """Record an OUTPUT the harness produced itself (no model call)."""
        ...

    def report(self, result: dict[str, Any]) -> None:
        """Record the TOOL_RESULT of a tool the harness ran itself (IN_HARNESS_REPORTED)."""
        ...

    def usage(self, usage: dict[str, Any]) -> None:
        """Record a USAGE event."""
        ...

    def tool(self, call: Mapping[str, Any]) -> dict[str, Any]:
        """Run a host tool call (mediation MEDIATION_CONTROLLER_MEDIATED): TOOL_CALL is made
        durable (a sync) before the executor runs, then TOOL_RESULT; returns the ToolResult
        dict (``is_error`` True, code EXECUTOR_ERROR on an executor failure: the model sees
        it). Replay and resume serve the recorded result (the executor is not called). A
        call with another tier raises UnmediatedToolCallError before anything is recorded;
        no idempotency key raises MissingIdempotencyKeyError."""
        ...

    def delta(self, text: str) -> None:
        """Stream partial text to whoever watches; never journaled."""
        ...

    def state(self, data: bytes, *, covers_to: int = 0, expected_version: int | None = None) -> int:
        """Commit the harness's working state (covering the journal up to ``covers_to``; 0:
        the head), after what the controller has pending and durable with it (one sync);
        returns the new version. A stale ``expected_version`` raises StateConflictError with
        the current snapshot and writes nothing. A resumed run's repeat of the same commit
        is not applied twice (its id comes from the execution and the commit's ordinal in
        the run); a replay writes nothing and returns the version the live run got."""
        ...


class Harness(Protocol):
    """An agent loop: described once, then run once per execution."""

    def describe(self) -> HarnessDescriptor: ...

    def run(self, start: Start, sink: Sink) -> None:
        """Drive one execution; return on success, raise on failure."""
        ...


HarnessFactory = Callable[[], Harness]


class ToolStore(Protocol):
    """A tool's own store, bound by the host to one (session, tool) pair
    (``agentsessions/tools/toolstore.py``): commit, read and follow its entries. It takes no
    session or path: it cannot reach the conversation, another tool's store or another
    session. The host stamps each entry's author (the tool's name) and time."""

    def commit(
        self,
        entries: Sequence[Mapping[str, Any]],
        *,
        state: bytes | None = None,
        expected_end: int | None = None,
        expected_state_version: int | None = None,
        commit_id: str | None = None,
    ) -> CommitResult:
        """Append ``entries`` (JSON objects) as one commit, if the store ends at
        ``expected_end`` (None: wherever it ends); ``commit_id`` makes a retry a no-op.
        ``state``/``expected_state_version``: the tool's working state (a follow-up:
        refused with InvalidArgumentError until the store's writer takes state)."""
        ...

    def read(self, from_seq: int = 1) -> list[ToolStoreEntry]:
        """The entries from ``from_seq`` on, in order."""
        ...

    def follow(
        self, from_seq: int = 1, *, idle_timeout: float | None = None
    ) -> Iterator[ToolStoreEntry]:
        """The entries from ``from_seq`` on, then each new one as it commits."""
        ...


@value(frozen=True)
class ToolRequest:
    """One mediated call as its executor gets it; ``config`` is the workload's for the tool.
    ``store`` is the tool's own store when the workload names it a tool component
    (``[session] tool_components``), else None."""

    session_uid: str
    call_id: str
    tool: str
    args: Mapping[str, Any]
    idempotency_key: str
    config: Mapping[str, Any] = field(default_factory=dict)
    store: ToolStore | None = None


@value(frozen=True)
class ToolOutcome:
    """What an executor did: ``output`` (a JSON object) and ``content`` parts for the model,
    or ``error`` (non-empty: an is_error result, code EXECUTOR_ERROR)."""

    output: Mapping[str, Any] | None = None
    content: tuple[dict[str, Any], ...] = ()
    error: str = ""


class ToolExecutor(Protocol):
    """Runs mediated tool calls. An executor that dedups on (session uid, idempotency key)
    itself, so that a second call with the same key returns the first outcome without a
    second effect, says so with a true ``idempotent`` attribute: only such an executor is
    re-driven after a crash left a call's outcome unknown (see ``controller/sinks.py``)."""

    def call(self, request: ToolRequest) -> ToolOutcome: ...


@value(frozen=True)
class BoundTool:
    """A tool of a session's workload as the host runs it: its executor and its config."""

    name: str
    executor: ToolExecutor
    config: Mapping[str, Any] = field(default_factory=dict)
    store: ToolStore | None = None  # the tool's own store, when it is a tool component


ToolOffer = Callable[[str], tuple[ToolSpec, ...]]
"""``(session uid) -> the tools its current workload offers a harness`` (``Start.tools``),
in a stable order: a fixed table's for every run (tests, embedding code). An engine passes
:class:`Workloads` instead, so that each execution keeps its own."""

ToolResolver = Callable[[str, str], BoundTool]
"""``(session uid, tool name) -> BoundTool``; raises UnknownToolError for a tool the
session's workload does not have."""


class Workloads(Protocol):
    """Each session's workloads by digest (``agentsessions/v1/workloadref.py``).

    A new execution records the digest of the session's current workload in its
    EXECUTION_START; its resume, approval and replay then get that workload's tools and
    executors, never those of a later ``--tools``. Digest ``""`` (an execution recorded
    before digests, or by a session without tools) means the session's current workload."""

    def current(self, uid: str) -> str:
        """The digest of ``uid``'s workload now, kept by that digest before this returns so
        that a run recording it finds it again; "" when the session has no workload."""
        ...

    def offers(self, uid: str, digest: str) -> tuple[ToolSpec, ...]:
        """The tools workload ``digest`` offers a harness (``Start.tools``), in a stable
        order."""
        ...

    def bind(self, uid: str, digest: str, name: str) -> BoundTool:
        """The tool ``name`` of workload ``digest`` with its executor; UnknownToolError."""
        ...

    def check_harness(self, uid: str, harness: str) -> None:
        """Raise WorkloadError, before anything is written, when ``uid``'s current workload
        names the components that work in its conversation and ``harness`` is not one."""
        ...


class ModelProvider(Protocol):
    """One call in, one completion out."""

    def complete(
        self, request: ModelRequest, on_delta: Callable[[str], None] | None = None
    ) -> Completion: ...


@value(frozen=True)
class RuntimeCapabilities:
    """What a runtime can do, and what its snapshots survive."""

    memory_snapshot: bool = False
    cow_fork: bool = False
    attest: bool = False
    gpu_state: bool = False
    snapshot_survives_reboot: bool = False
    snapshot_survives_host_process: bool = False


@value(frozen=True)
class SnapshotRef:
    """Where a suspended compute's state lives (``agentsessions.v1.SnapshotRef``)."""

    local: str = ""
    external_uri: str = ""
    memory: bool = False
    sealed: bool = False


class Compute(Protocol):
    """A live harness instance placed by a runtime."""

    @property
    def harness(self) -> Harness: ...


class Runtime(Protocol):
    """A compute backend: create, snapshot, restore and stop harness instances."""

    name: str

    def capabilities(self) -> RuntimeCapabilities: ...

    def create(self, session: str, factory: HarnessFactory) -> Compute: ...

    def find(self, session: str) -> Compute | None:
        """The session's live compute, if this runtime still holds one."""
        ...

    def snapshot(self, session: str, compute: Compute) -> SnapshotRef: ...

    def restore(self, session: str, snapshot: SnapshotRef) -> Compute: ...

    def clone(self, snapshot: SnapshotRef, sessions: Sequence[str]) -> list[SnapshotRef]:
        """Copies of a memory snapshot for forked children (needs ``cow_fork``)."""
        ...

    def stop(self, session: str, compute: Compute) -> None: ...


def can_place(harness: HarnessDescriptor, runtime: RuntimeCapabilities) -> bool:
    """False only for a REQUIRES_MEMORY_SNAPSHOT harness on a runtime without snapshots."""
    needs_memory = harness.capabilities.resumability == REQUIRES_MEMORY_SNAPSHOT
    return runtime.memory_snapshot or not needs_memory

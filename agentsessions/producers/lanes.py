"""The producer: deliveries run as turns, one lane per thread, answers handed to a sink.

A *lane* is one thread's queue and the worker that empties it: a thread's turns run one at a
time, in the order their deliveries arrived (a comment storm on one issue is serialised and
nothing is dropped), while different threads' lanes run in parallel. A lane ends when it has
been idle a while and is made again by the next delivery.

Invariants:

- :meth:`Producer.submit` returns only once the delivery's INPUT is durable (the turn's
  frames yield a record once it is); the turn and its answer go on after that, so a
  receiver answers the platform within its timeout while a slow model still runs. If the
  engine refuses the turn (nothing written), ``submit`` raises its error;
- a thread's session is found or made by its origin (:meth:`Thread.origin`: ``ensure``,
  atomic across processes); a restart finds the producer's sessions by their origin's
  source;
- a turn cut off earlier (the producer was killed mid-turn) is completed before the thread's
  next delivery runs, and its answer sent then: :meth:`Producer.recover` does it at start
  for every such session. A reply is sent at most once: nothing records that it was sent,
  so a producer killed after a turn's END but before its sink returned does not send that
  answer again (it stays in the journal; ``log`` shows it);
- a turn that fails leaves its session resumable (``agentsessions resume``) and its next
  delivery starts a new turn; a sink that fails is logged, the turn stays journaled.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from agentsessions.errors import AgentSessionsError, UnavailableError
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.values import Frame, RecordFrame, Session, SessionFrame, Turn

from .mapping import Ack, Delivery, Thread, kind_of
from .sinks import Reply, ReplySink

EditPolicy = Literal["reply", "quiet", "ignore"]
IDLE_SECONDS = 30.0
"""How long a lane's worker waits for its thread's next delivery before it ends."""


@dataclass(frozen=True)
class ProducerSettings:
    """How a producer runs its turns.

    ``project``: where its sessions live; ``harness``/``model``/``config``: the turn's
    (""/b"": the session's, else the engine's defaults); ``wait``: seconds a turn waits for a
    session another process is writing; ``on_edit``: an edit or deletion is recorded and
    answered (``reply``), recorded and its answer kept in the journal only (``quiet``), or
    not recorded at all (``ignore``).
    """

    project: str = "default"
    harness: str = ""
    model: str = ""
    config: bytes = b""
    wait: float = 60.0
    on_edit: EditPolicy = "quiet"


class _Job:
    """A lane's unit of work: a delivery to run, or (``delivery`` None) a turn to resume."""

    def __init__(self, thread: Thread, delivery: Delivery | None = None, uid: str = "") -> None:
        self.thread, self.delivery, self.uid = thread, delivery, uid
        self._done = threading.Event()
        self._ack: Ack | None = None
        self._error: AgentSessionsError | None = None

    def accept(self, ack: Ack) -> None:
        self._ack = ack
        self._done.set()

    def refuse(self, error: AgentSessionsError) -> None:
        if not self._done.is_set():
            self._error = error
            self._done.set()

    def wait(self) -> Ack:
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._ack is not None
        return self._ack


class Producer:
    """Runs deliveries as turns of their threads' sessions on ``sessions``; answers go to
    ``sink``; one line per outcome goes to ``log``. Thread-safe."""

    def __init__(
        self,
        sessions: Sessions,
        sink: ReplySink,
        settings: ProducerSettings | None = None,
        *,
        log: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.sessions, self.sink = sessions, sink
        self.settings = settings or ProducerSettings()
        self.log = log
        self._lanes: dict[str, tuple[queue.Queue[_Job | None], threading.Thread]] = {}
        self._lock = threading.Lock()
        self._closed = False

    # -- the receiver's side ---------------------------------------------------------------
    def skips(self, delivery: Delivery) -> str:
        """Why ``delivery`` is not recorded at all ("" when it is)."""
        if delivery.kind != "message" and self.settings.on_edit == "ignore":
            return f"{delivery.kind}s are ignored (on_edit=ignore)"
        return ""

    def submit(self, delivery: Delivery) -> Ack:
        """Queue ``delivery`` on its thread's lane; return once its INPUT is durable."""
        job = _Job(delivery.thread, delivery)
        self._put(job)
        return job.wait()

    def recover(self, source: str) -> int:
        """Queue the completion of every turn of ``source``'s sessions that was cut off (a
        producer killed mid-turn); their answers are sent when they complete. How many."""
        count, cursor = 0, None
        while True:
            page = self.sessions.list(project=self.settings.project, page_size=200, cursor=cursor)
            for session in page.sessions:
                mine = (session.origin or {}).get("source") == source
                if mine and session.busy:
                    self._put(_Job(Thread.of_origin(session.origin or {}), uid=session.uid))
                    count += 1
            if not page.next_cursor:
                return count
            cursor = page.next_cursor

    def close(self) -> None:
        """Refuse new deliveries, then wait until every lane has run what it was given."""
        with self._lock:
            self._closed = True
            lanes = list(self._lanes.values())
            for jobs, _ in lanes:
                jobs.put(None)  # after the jobs queued before it
        for _, worker in lanes:
            worker.join()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- lanes -----------------------------------------------------------------------------
    def _put(self, job: _Job) -> None:
        key = job.thread.key()
        with self._lock:  # a lane is only ever removed under this lock, once empty
            if self._closed:
                raise UnavailableError("the producer is shutting down; deliver again later")
            lane = self._lanes.get(key)
            if lane is None:
                jobs: queue.Queue[_Job | None] = queue.Queue()
                worker = threading.Thread(
                    target=self._run_lane, args=(key, jobs), name=f"lane {job.thread.subject}"
                )
                lane = self._lanes[key] = (jobs, worker)
                worker.start()
            lane[0].put(job)

    def _run_lane(self, key: str, jobs: queue.Queue[_Job | None]) -> None:
        while True:
            try:
                job = jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if jobs.empty():
                        del self._lanes[key]
                        return
                continue
            if job is None:
                return
            try:
                self._run(job)
            except AgentSessionsError as exc:
                job.refuse(exc)
                self.log(f"{job.thread.subject}: {exc.message}")
            except Exception as exc:  # a lane never dies with deliveries queued behind it
                job.refuse(UnavailableError(f"internal error: {type(exc).__name__}: {exc}"))
                self.log(f"{job.thread.subject}: internal error: {type(exc).__name__}: {exc}")

    # -- one job ---------------------------------------------------------------------------
    def _run(self, job: _Job) -> None:
        if job.delivery is None:
            self._resume(job.uid, job.thread)
            return
        delivery = job.delivery
        session = self._session(delivery.thread)
        if session.busy:  # a turn cut off earlier: finish (and answer) it first
            self._resume(session.uid, delivery.thread)
        frames = self.sessions.exec(
            session.uid,
            [delivery.input()],
            harness=self.settings.harness or None,
            model=self.settings.model or None,
            config=self.settings.config,
            wait=self.settings.wait,
            commit_id=delivery.delivery_id,  # a redelivery is answered by the journal
        )
        ack, turn = self._until_input(frames, session.uid, delivery.delivery_id)
        job.accept(ack)
        if ack.duplicate:
            self.log(f"delivery {delivery.delivery_id}: a redelivery, recorded already")
            if turn is None or not turn.resumed:  # its answer went out with the first one
                return
        else:
            self.log(
                f"delivery {delivery.delivery_id}: {delivery.kind} by {delivery.author.login} "
                f"on {delivery.thread.subject} recorded in {ack.uid} at seq {ack.seq}"
            )
            turn = self._finish(frames, session.uid)
        quiet = delivery.kind != "message" and self.settings.on_edit == "quiet"
        if turn is not None and not quiet:
            self._reply(delivery.thread, turn)

    def _until_input(
        self, frames: Iterator[Frame], uid: str, delivery_id: str
    ) -> tuple[Ack, Turn | None]:
        """Read ``frames`` up to the durable INPUT record: its ack. A redelivery writes no
        INPUT (its turn landed already): its ack names that turn's, and the turn is
        returned too (the stream has ended; ``resumed`` if it was cut off and finished now)."""
        turn = None
        for frame in frames:
            if isinstance(frame, RecordFrame) and _kind(frame.record.event) == "EVENT_INPUT":
                return Ack(delivery_id, uid, frame.record.seq), None
            if isinstance(frame, SessionFrame) and frame.last:
                turn = frame.turn
        if turn is None or not turn.duplicate:
            raise UnavailableError(f"the turn of {uid} recorded no input; nothing to acknowledge")
        inputs = self.sessions.read(uid, from_seq=turn.first_seq, to_seq=turn.last_seq)
        seq = next((r.seq for r in inputs if _kind(r.event) == "EVENT_INPUT"), turn.first_seq)
        return Ack(delivery_id, uid, seq, duplicate=True), turn

    def _session(self, thread: Thread) -> Session:
        session, _ = self.sessions.ensure(
            origin=thread.origin(),
            project=self.settings.project,
            harness=self.settings.harness,
            model=self.settings.model,
            labels=thread.labels(),
        )
        return session

    def _resume(self, uid: str, thread: Thread) -> None:
        frames = self.sessions.resume(uid, wait=self.settings.wait)
        turn = self._finish(frames, uid)
        if turn is not None:
            self.log(f"{thread.subject}: resumed the turn cut off in {uid}")
            if not self._quiet(uid, turn):
                self._reply(thread, turn)

    def _quiet(self, uid: str, turn: Turn) -> bool:
        """Whether ``turn`` answers an edit or a deletion whose answer stays unsent."""
        if self.settings.on_edit != "quiet":
            return False
        for record in self.sessions.read(uid, from_seq=turn.first_seq, to_seq=turn.last_seq):
            if _kind(record.event) == "EVENT_INPUT":
                return kind_of(record.event) != "message"
        return False

    def _finish(self, frames: Iterator[Frame], uid: str) -> Turn | None:
        """Drain a turn's frames: the turn, or None if none ran or it failed (logged)."""
        turn = None
        try:
            for frame in frames:
                if isinstance(frame, SessionFrame) and frame.last:
                    turn = frame.turn
        except AgentSessionsError as exc:
            self.log(
                f"the turn of {uid} failed ({exc.message}); the session is resumable: "
                f"agentsessions resume {uid}"
            )
            return None
        return turn

    def _reply(self, thread: Thread, turn: Turn) -> None:
        text = "\n\n".join(t for t in turn.outputs if t.strip())
        if not text:
            self.log(f"{thread.subject}: the turn {turn.execution_id} of {turn.uid} said nothing")
            return
        try:
            self.sink.send(Reply(thread, turn.uid, turn.execution_id, text))
        except AgentSessionsError as exc:
            self.log(f"{thread.subject}: {exc.message}")


def _kind(event: Mapping[str, Any]) -> str:
    return str(event.get("kind", ""))

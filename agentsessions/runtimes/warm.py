"""The warm runtime: harness memory that outlives the CLI process, and warm fork snapshots.

Design
------
``create(session, factory)`` starts a detached *host process* for the session
(:mod:`agentsessions.runtimes.warm_host`). The host imports the factory by its
``"module:attr"`` name (:mod:`agentsessions.runtimes.refs`), builds the harness and
serves it on ``<home>/run/live-<session>.sock`` (0600; :mod:`warm_dir` has the layout and
the short-path fallback). Every later process finds that host again from the session uid
alone: ``create`` attaches to a live host running the same factory, and ``find``
returns it without starting anything.

A compute's ``harness`` is a :class:`RemoteHarness`: ``describe`` and ``run`` travel over
the socket as length-prefixed JSON frames (:mod:`warm_wire`). The real harness runs in
the host; each sink call (model, output, report, usage, tool, delta) and each history read
comes back to the calling process, which answers it from its own sink and history. So
the controller's sink in the calling process still records every effect before the
harness sees its result. A harness exception comes back as HarnessError with its
message; an exception raised by the caller's sink is re-raised as itself.

``snapshot`` asks the host to fork at a quiescent point (the host serves one connection
at a time, so never mid-run). The copy is *frozen*: it blocks in ``accept`` on
``<home>/run/snap-<id>.sock`` and never runs the harness. It is addressed by
``SnapshotRef(local="warm:<id>", memory=True, sealed=False)``; the live host may then be
stopped (suspend is cold: it frees the live compute). ``restore`` thaws the frozen copy:
that very process becomes the session's live host (the snapshot is consumed; a retried
restore of the same ref attaches to it). ``clone`` forks the frozen copy once per child
session, so children share the parent's pages copy-on-write, and returns one ref each.

What survives what (``capabilities()`` says the same)
-----------------------------------------------------
- A live host and a warm snapshot survive the CLI process that made them exiting: each
  is its own process (``snapshot_survives_host_process=True``).
- Nothing survives a reboot (``snapshot_survives_reboot=False``), ``kill`` of the
  process, or its idle timeout (``AGENTSESSIONS_WARM_IDLE_SECONDS``, default one hour,
  which applies to frozen snapshots too). Memory is never written to disk.
- Restoring a lost snapshot raises UnavailableError naming the ref: the session can
  only be resumed cold (replay), and a REQUIRES_MEMORY_SNAPSHOT harness's memory is gone.
  ``create`` cannot tell a lost live host from a new session: it starts a fresh harness,
  so a controller that needs the memory should ``find`` first.
- Real checkpoint to disk (CRIU) is probed by :func:`.warm_probe.criu_available` and reported by
  :func:`.warm_probe.probe`; it is not used (it fails on this project's kernels).

A snapshot is a process fork, so only the thread that serves the socket exists in the
copy: a harness that runs background threads must not rely on them across a snapshot, and
file descriptors it holds are shared with the copy.

Hygiene: hosts exit by themselves after the idle timeout (counted from the last caller; a
``ping`` does not count); :func:`.warm_launch.shutdown_all` ends every host of a home and
:mod:`agentsessions.runtimes.compute` lists and stops them per session; every wait is
bounded; nothing listens on the network.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import socket
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from agentsessions.controller.spi import (
    Compute,
    Event,
    HarnessDescriptor,
    HarnessFactory,
    History,
    RuntimeCapabilities,
    Sink,
    SnapshotRef,
    Start,
)
from agentsessions.errors import (
    HarnessError,
    PlacementError,
    UnavailableError,
)
from agentsessions.runtimes import warm_dir
from agentsessions.runtimes import warm_settings as settings
from agentsessions.runtimes import warm_wire as wire
from agentsessions.runtimes.refs import (
    FactoryRef,
    factory_ref,
    new_snapshot_id,
    snapshot_id,
    warm_ref,
)
from agentsessions.runtimes.warm_dir import Endpoint, RunDir
from agentsessions.runtimes.warm_launch import (
    COLD_HINT,
    end_host,
    host_gone,
    launch_error,
    start_host,
)

__all__ = ["FactoryRef", "RemoteHarness", "WarmCompute", "WarmRuntime"]

IDLE_ENV = settings.IDLE_ENV
DEFAULT_IDLE_SECONDS = settings.DEFAULT_IDLE_SECONDS

HISTORY_PAGE = 256


class RemoteHarness:
    """The Harness protocol, served by a warm host process over its socket."""

    def __init__(self, session: str, socket_path: str, runtime: WarmRuntime) -> None:
        self._session = session
        self._socket = socket_path
        self._runtime = runtime
        self._descriptor: HarnessDescriptor | None = None

    def describe(self) -> HarnessDescriptor:
        """The hosted harness's descriptor (asked once, then cached)."""
        if self._descriptor is None:
            reply = self._runtime.control(self._socket, {"op": "describe"}, self._session)
            if not reply.get("ok"):
                raise HarnessError(str(reply.get("error")), session=self._session)
            self._descriptor = wire.descriptor_from_wire(reply["descriptor"])
        return self._descriptor

    def run(self, start: Start, sink: Sink) -> None:
        """Run one execution in the host, answering its sink calls and history reads here."""
        served = _Served(start.history, sink)
        try:
            conn = wire.connect(self._socket, self._runtime.control_seconds)
        except OSError:
            raise host_gone(self._session) from None
        with conn:
            failed = self._exchange(conn, start, served)
        if failed is not None:
            raise served.failure(failed, self._session)

    def _exchange(self, conn: socket.socket, start: Start, served: _Served) -> wire.Frame | None:
        """Drive the run's frames; the failure frame if the run failed, else None."""
        try:
            wire.send(conn, {"op": "run", "start": wire.start_to_wire(start)})
            while True:
                frame = wire.recv(conn, self._runtime.run_seconds)
                if "call" in frame:
                    reply = served.answer(frame)
                    if reply is not None:
                        wire.send(conn, reply)
                    continue
                return None if frame.get("done") else frame
        except TimeoutError:
            raise HarnessError(
                f"the warm host of session {self._session} sent nothing for "
                f"{self._runtime.run_seconds:g} s during a run",
                session=self._session,
            ) from None
        except OSError as exc:
            raise HarnessError(
                f"the warm host of session {self._session} was lost mid-run: {exc}",
                session=self._session,
                hint="resume the session: the interrupted turn is re-driven",
            ) from None


class _Served:
    """Answers a hosted run's calls from the caller's real sink and history."""

    def __init__(self, history: History, sink: Sink) -> None:
        self.history = history
        self.sink = sink
        self.errors: dict[int, Exception] = {}
        self._cursors: dict[int, Iterator[Event]] = {}
        self._next_cursor = itertools.count(1)

    def answer(self, frame: wire.Frame) -> wire.Frame | None:
        """The reply to one call frame (None for one-way notices such as deltas)."""
        call = str(frame.get("call"))
        if call == "delta":
            with contextlib.suppress(Exception):  # deltas are never journaled
                self.sink.delta(str(frame.get("text", "")))
            return None
        try:
            result = self._dispatch(call, frame)
        except Exception as exc:
            self.errors[int(frame.get("n", 0))] = exc
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        return {"ok": True, "result": result}

    def _dispatch(self, call: str, frame: wire.Frame) -> Any:
        if call == "model":
            completion = self.sink.model(wire.request_from_wire(frame["request"]))
            return wire.completion_to_wire(completion)
        if call == "output":
            return self.sink.output(frame["message"])
        if call == "report":
            return self.sink.report(frame["result"])
        if call == "usage":
            return self.sink.usage(frame["usage"])
        if call == "tool":
            return self.sink.tool(frame["tool_call"])
        if call == "state":
            data = base64.b64decode(frame["data"])
            return self.sink.state(
                data, covers_to=int(frame["covers_to"]), expected_version=frame["expected_version"]
            )
        if call == "history_len":
            return len(self.history)
        if call == "history_tail":
            return self.history.tail(int(frame["count"]))
        if call == "history_open":
            cursor = next(self._next_cursor)
            self._cursors[cursor] = iter(self.history)
            return cursor
        if call == "history_next":
            return self._page(int(frame["cursor"]))
        raise HarnessError(f"the warm host made an unknown call {call!r}")

    def _page(self, cursor: int) -> list[Event]:
        events = self._cursors.get(cursor)
        page = [] if events is None else list(itertools.islice(events, HISTORY_PAGE))
        if not page:
            self._cursors.pop(cursor, None)
        return page

    def failure(self, frame: wire.Frame, session: str) -> Exception:
        """The exception for a failed run: the caller's own sink error, or a HarnessError."""
        original = self.errors.get(int(frame.get("sink_call", -1)))
        if original is not None:
            return original
        return HarnessError(
            str(frame.get("error", "the warm host refused the run")),
            session=session,
            exception=frame.get("exception"),
        )


class WarmCompute:
    """A live warm host serving one session; rebuilt from the session uid by ``find``."""

    def __init__(self, session: str, status: wire.Frame, runtime: WarmRuntime) -> None:
        self.session = session
        self.pid = int(status["pid"])
        self.socket = str(status["socket"])
        self.factory = str(status.get("factory", ""))
        self.origin = str(status.get("origin", ""))
        self._harness = RemoteHarness(session, self.socket, runtime)

    @property
    def harness(self) -> RemoteHarness:
        """The hosted harness, reached over the host's socket."""
        return self._harness

    def __repr__(self) -> str:
        return f"WarmCompute(session={self.session!r}, pid={self.pid})"


class WarmRuntime:
    """Harness compute in detached host processes: memory survives the CLI, not a reboot.

    ``home`` is the store's home; hosts keep sockets and state under ``home/run/``. Every
    timeout is in seconds: ``control_seconds`` bounds a control call (ping, describe,
    snapshot, restore, clone, stop), ``run_seconds`` bounds the silence between two frames
    of a run, ``start_seconds`` bounds a host's start (including the factory),
    ``idle_seconds`` is how long a host or frozen snapshot waits for a caller before it
    exits (default ``AGENTSESSIONS_WARM_IDLE_SECONDS``, else one hour).
    """

    name = "warm"

    def __init__(
        self,
        home: Path,
        *,
        idle_seconds: float | None = None,
        control_seconds: float = 30.0,
        run_seconds: float = 3600.0,
        start_seconds: float = 60.0,
    ) -> None:
        self.run_dir = RunDir(home)
        self.idle_seconds = settings.idle_seconds(idle_seconds)
        self.control_seconds = control_seconds
        self.run_seconds = run_seconds
        self.start_seconds = start_seconds
        self._factories: dict[str, str] = {}

    def capabilities(self) -> RuntimeCapabilities:
        """Warm memory snapshots and copy-on-write forks, where ``fork`` exists."""
        return settings.warm_capabilities()

    # ----------------------------------------------------------------- compute

    def create(self, session: str, factory: HarnessFactory) -> WarmCompute:
        """Attach to the session's live host, or start one that builds ``factory()``.

        PlacementError if ``factory`` has no importable name, or if the live host runs
        another factory.
        """
        ref = factory_ref(factory)
        self._factories[session] = ref
        live = self._ping(self.run_dir.live(session))
        if live is None:
            return self._launch(session, ref)
        if live.get("factory") != ref:
            raise PlacementError(
                f"session {session} already has a live warm host running {live.get('factory')}, "
                f"not {ref}",
                session=session,
                hint="stop the live compute (suspend the session) before switching harness",
            )
        return WarmCompute(session, live, self)

    def find(self, session: str) -> WarmCompute | None:
        """The session's live compute if a host still serves it, else None (nothing starts)."""
        live = self._ping(self.run_dir.live(session))
        return None if live is None else WarmCompute(session, live, self)

    def stop(self, session: str, compute: Compute) -> None:
        """End the session's live host (idempotent: a host already gone is fine)."""
        endpoint = self.run_dir.live(session)
        try:
            live = self._ping(endpoint)
        except UnavailableError:  # wedged: fall back to the pid its state file records
            live = warm_dir.read_state(endpoint.state) or {"pid": getattr(compute, "pid", 0)}
        if live is not None:
            end_host(endpoint.socket, endpoint.state, int(live.get("pid", 0)))

    # ----------------------------------------------------------------- snapshots

    def snapshot(self, session: str, compute: Compute) -> SnapshotRef:
        """Fork a frozen copy of the session's host between runs; the live host keeps going."""
        snap = new_snapshot_id()
        frame = {"op": "snapshot", "target": self._target(self.run_dir.snapshot(snap))}
        reply = self.control(self.run_dir.live(session).socket, frame, session)
        if not reply.get("ok"):
            raise UnavailableError(
                f"cannot snapshot session {session}: {reply.get('error')}", session=session
            )
        return warm_ref(snap)

    def restore(self, session: str, snapshot: SnapshotRef) -> WarmCompute:
        """Thaw a warm snapshot into the session's live host (the snapshot is consumed).

        UnavailableError names the ref when its frozen process is gone: resume cold.
        A ref without memory starts a fresh harness if this runtime created the session.
        """
        snap = snapshot_id(snapshot)
        if snap is None:
            return self._restore_cold(session, snapshot)
        endpoint = self.run_dir.live(session)
        live = self._ping(endpoint)
        if live is not None and live.get("origin") == snap:
            return WarmCompute(session, live, self)  # already thawed: a retried restore
        frozen = self._ping(self.run_dir.snapshot(snap))
        if frozen is None or frozen.get("role") != "snapshot":
            raise self._lost(session, snapshot)
        if live is not None:
            end_host(endpoint.socket, endpoint.state, int(live["pid"]))
        frame = {"op": "thaw", "session": session, "target": self._target(endpoint)}
        reply = self.control(self.run_dir.snapshot(snap).socket, frame, session)
        if not reply.get("ok"):
            raise UnavailableError(
                f"cannot restore {snapshot.local} for session {session}: {reply.get('error')}",
                session=session,
                snapshot=snapshot.local,
            )
        return WarmCompute(session, reply, self)

    def clone(self, snapshot: SnapshotRef, sessions: Sequence[str]) -> list[SnapshotRef]:
        """One frozen copy-on-write copy of ``snapshot`` per child session, all or nothing."""
        snap = snapshot_id(snapshot)
        if snap is None:
            if snapshot.memory:
                raise PlacementError(f"{snapshot.local!r} is not a warm snapshot of this runtime")
            return [SnapshotRef() for _ in sessions]  # cold: children are rebuilt by replay
        ids = [new_snapshot_id() for _ in sessions]
        targets = [
            {**self._target(self.run_dir.snapshot(i)), "session": child}
            for i, child in zip(ids, sessions, strict=True)
        ]
        source = self.run_dir.snapshot(snap)
        try:
            reply = self.control(source.socket, {"op": "clone", "targets": targets}, "")
        except UnavailableError:
            raise self._lost(", ".join(sessions), snapshot) from None
        if not reply.get("ok"):
            raise UnavailableError(f"cannot clone {snapshot.local}: {reply.get('error')}")
        return [warm_ref(i) for i in ids]

    def discard(self, snapshot: SnapshotRef) -> None:
        """End a warm snapshot's frozen process (nothing happens if it is gone)."""
        snap = snapshot_id(snapshot)
        if snap is None:
            return
        endpoint = self.run_dir.snapshot(snap)
        frozen = self._ping(endpoint)
        if frozen is not None:
            end_host(endpoint.socket, endpoint.state, int(frozen["pid"]))

    def snapshot_pid(self, snapshot: SnapshotRef) -> int | None:
        """The pid of the process holding a warm snapshot, or None if it is gone."""
        snap = snapshot_id(snapshot)
        frozen = None if snap is None else self._ping(self.run_dir.snapshot(snap))
        return None if frozen is None else int(frozen["pid"])

    # ----------------------------------------------------------------- plumbing

    def control(self, socket_path: str, frame: wire.Frame, session: str) -> wire.Frame:
        """One control request to a host; UnavailableError when no host answers."""
        try:
            return wire.request(socket_path, frame, self.control_seconds)
        except TimeoutError:
            raise UnavailableError(
                f"the warm host at {socket_path} did not answer within "
                f"{self.control_seconds:g} s (busy with another run?)",
                session=session or None,
            ) from None
        except OSError:
            raise host_gone(session) from None

    def _ping(self, endpoint: Endpoint) -> wire.Frame | None:
        try:
            reply = wire.request(endpoint.socket, {"op": "ping"}, self.control_seconds)
        except TimeoutError:
            raise UnavailableError(
                f"the warm host at {endpoint.socket} did not answer a ping within "
                f"{self.control_seconds:g} s (busy with another run?)"
            ) from None
        except OSError:  # no socket, nobody listening, or the host went away mid-reply
            return None
        if reply.get("protocol") != wire.PROTOCOL:
            raise UnavailableError(
                f"the warm host at {endpoint.socket} speaks protocol {reply.get('protocol')!r}, "
                f"not {wire.PROTOCOL}",
                hint="stop it (shutdown_all) and start the session's compute again",
            )
        return reply

    def _target(self, endpoint: Endpoint) -> dict[str, str]:
        snap = endpoint.stem.partition("-")[2]
        return {"id": snap, "socket": endpoint.socket, "state": endpoint.state}

    def _launch(self, session: str, ref: str) -> WarmCompute:
        self.run_dir.ensure()
        endpoint = self.run_dir.live(session)
        spec = {
            "session": session,
            "factory": ref,
            "socket": endpoint.socket,
            "state": endpoint.state,
            "log": str(self.run_dir.log),
            "idle_seconds": self.idle_seconds,
            "io_seconds": self.run_seconds,
            "start_seconds": self.start_seconds,
        }
        command = [sys.executable, "-m", warm_dir.HOST_MODULE, "launch", json.dumps(spec)]
        status = start_host(command, self.start_seconds)
        live = self._ping(endpoint)  # ours, or one a concurrent caller started first
        if live is not None and live.get("factory") == ref:
            return WarmCompute(session, live, self)
        if status.get("ok"):
            status = {"kind": "start", "error": "the host started but does not answer"}
        raise launch_error(status, session, self.run_dir.log)

    def _restore_cold(self, session: str, snapshot: SnapshotRef) -> WarmCompute:
        if snapshot.memory:
            raise PlacementError(
                f"{snapshot.local!r} is not a warm snapshot of this runtime", session=session
            )
        ref = self._factories.get(session)
        if ref is None:
            raise UnavailableError(
                f"snapshot {snapshot.local!r} holds no memory and this runtime does not know "
                f"session {session}'s harness",
                session=session,
                hint="create the compute with its harness factory and replay the journal",
            )
        endpoint = self.run_dir.live(session)
        live = self._ping(endpoint)
        if live is not None:
            end_host(endpoint.socket, endpoint.state, int(live["pid"]))
        return self._launch(session, ref)

    def _lost(self, session: str, snapshot: SnapshotRef) -> UnavailableError:
        return UnavailableError(
            f"warm snapshot {snapshot.local} is gone: its frozen process ended (killed, idle "
            f"for {self.idle_seconds:g} s, or the machine rebooted); session {session} must be "
            f"resumed cold by replay, and a REQUIRES_MEMORY_SNAPSHOT harness has lost its memory",
            session=session,
            snapshot=snapshot.local,
            hint=COLD_HINT,
        )

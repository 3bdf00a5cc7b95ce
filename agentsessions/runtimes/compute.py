"""A home's warm compute, made visible: list it, stop it, say where a session's memory lives.

The warm runtime (:mod:`agentsessions.runtimes.warm`) keeps a harness's memory in detached
host processes: a *live host* per session and a *frozen snapshot* per suspend or fork. They
outlive the command that started them and exit only after their idle timeout, so this
module is how a user (the ``compute`` commands, ``get``) and, later, the ``Sessions`` API
see and end them.

Invariants:
- liveness is decided by a ping over the host's socket (a ping never resets a host's idle
  clock, so listing keeps nothing alive); a state file whose host does not answer is stale
  and is not listed; a host busy with a run is listed from its state file as ``busy``;
- every probe is bounded by :data:`PROBE_SECONDS`, so ``get`` stays quick while a turn runs;
- stopping is idempotent: a session without compute stops nothing and is not an error;
- nothing here touches a journal: stopping compute loses memory, never records.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentsessions.controller.registry import Registry
from agentsessions.controller.rules import DEFAULT_HARNESS
from agentsessions.controller.spi import REQUIRES_MEMORY_SNAPSHOT, Harness
from agentsessions.journal.stores.store import SessionInfo
from agentsessions.runtimes import warm_dir
from agentsessions.runtimes import warm_wire as wire
from agentsessions.runtimes.refs import WARM_PREFIX
from agentsessions.runtimes.warm_dir import RunDir
from agentsessions.valueclass import value

PROBE_SECONDS = 1.0
LIVE = "live"
SNAPSHOT = "snapshot"
KIND_NAMES = {LIVE: "live host", SNAPSHOT: "snapshot"}


def iso_time(when: float | None) -> str | None:
    """A Unix time as ``2026-12-01T10:41:00Z`` (UTC, whole seconds), None for None."""
    if when is None or when <= 0:
        return None
    return datetime.fromtimestamp(when, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@value(frozen=True)
class HostInfo:
    """One warm host process of a home: a session's live host or a frozen snapshot."""

    session: str
    harness: str
    pid: int
    kind: str  # LIVE or SNAPSHOT
    snapshot: str  # "warm:<id>" for a snapshot, "" for a live host
    started: float | None
    idle_until: float | None  # None while the host is busy serving a run
    busy: bool
    socket: str
    state: str

    def to_json(self) -> dict[str, Any]:
        """The ``compute list --json`` object of this host."""
        return {
            "session": self.session,
            "harness": self.harness,
            "pid": self.pid,
            "kind": self.kind,
            "snapshot": self.snapshot,
            "started": iso_time(self.started),
            "idle_until": iso_time(self.idle_until),
            "busy": self.busy,
        }

    def idle_text(self) -> str:
        """When the host exits unless used: a time, or ``busy`` while it serves a run."""
        return "busy (serving a run)" if self.busy else iso_time(self.idle_until) or "-"


def list_compute(home: Path, session: str | None = None) -> list[HostInfo]:
    """Every warm host and frozen snapshot of ``home`` that still answers (of ``session``)."""
    hosts = []
    for path, state in RunDir(home).states():
        host = _probe(path, state)
        if host is not None and (session is None or host.session == session):
            hosts.append(host)
    return sorted(hosts, key=lambda h: (h.session, h.kind != LIVE, h.started or 0.0, h.pid))


def stop_compute(home: Path, session: str | None = None) -> list[HostInfo]:
    """End ``session``'s live host and snapshots (every host of ``home`` for None).

    Returns the hosts that were ended; idempotent (nothing to end returns ``[]``). The
    session's journal is untouched: a memory harness whose compute was stopped has lost its
    memory and continues only with ``exec --fresh-start``.
    """
    from agentsessions.runtimes.warm_launch import end_host, shutdown_all  # not for get's probe

    hosts = list_compute(home, session)
    for host in hosts:
        end_host(host.socket, host.state, host.pid)
    if session is None:
        shutdown_all(home)  # also clears state files whose host is wedged or gone
    return hosts


@value(frozen=True)
class MemoryStatus:
    """Where a session's harness memory lives, and until when (``get`` shows it)."""

    where: str  # "none", "unknown", "not started", LIVE, SNAPSHOT or "gone"
    text: str
    pid: int | None = None
    idle_until: float | None = None
    hint: str = ""

    def to_json(self) -> dict[str, Any]:
        """The ``memory`` object of ``get --json``."""
        return {
            "where": self.where,
            "pid": self.pid,
            "idle_until": iso_time(self.idle_until),
            "text": self.text,
            "hint": self.hint,
        }


def memory_status(home: Path, info: SessionInfo, requires_memory: bool | None) -> MemoryStatus:
    """Where ``info``'s harness memory is: a live host, a frozen snapshot, gone, or nowhere.

    ``requires_memory`` says whether the session's harness is REQUIRES_MEMORY_SNAPSHOT
    (None when the harness is not installed here). Costs one bounded ping per host.
    """
    if requires_memory is False:
        return MemoryStatus("none", "none (stateless harness: the journal is its state)")
    if requires_memory is None:
        name = info.meta.harness or DEFAULT_HARNESS
        return MemoryStatus("unknown", f"unknown (harness {name!r} is not installed here)")
    hosts = list_compute(home, info.uid)
    for host in hosts:
        if host.kind == LIVE:
            return MemoryStatus(
                LIVE, f"warm host pid {host.pid}, {_until(host)}", host.pid, host.idle_until
            )
    wanted = str((info.snapshot or {}).get("snapshot_local", ""))
    if info.compute_state == "COMPUTE_COLD" and wanted.startswith(WARM_PREFIX):
        for host in hosts:
            if host.snapshot == wanted:
                text = f"frozen snapshot {wanted} pid {host.pid}, {_until(host)}"
                return MemoryStatus(SNAPSHOT, text, host.pid, host.idle_until)
    if info.exec_seq == 0:
        return MemoryStatus("not started", "not started (the first exec starts a warm host)")
    return MemoryStatus(
        "gone",
        "gone (its warm host ended: stopped, idle timeout, killed or rebooted)",
        hint=f"start the harness again with empty memory: "
        f"agentsessions exec {info.uid} --fresh-start --input TEXT",
    )


def session_memory(home: Path, info: SessionInfo, harnesses: Registry[Harness]) -> MemoryStatus:
    """:func:`memory_status` of ``info``, its harness described through ``harnesses``."""
    name = info.meta.harness or DEFAULT_HARNESS
    try:
        descriptor = harnesses.create(name, project=info.meta.project).describe()
    except Exception:  # not installed here, or it cannot describe itself: say so, not fail
        return memory_status(home, info, None)
    return memory_status(
        home, info, descriptor.capabilities.resumability == REQUIRES_MEMORY_SNAPSHOT
    )


def _until(host: HostInfo) -> str:
    if host.busy:
        return "busy serving a run"
    return f"idle timeout at {host.idle_text()}"


def _probe(path: Path, state: dict[str, Any]) -> HostInfo | None:
    """The host behind one state file, or None if nobody answers on its socket."""
    sock = str(state.get("socket", ""))
    pid = state.get("pid")
    if not sock or not isinstance(pid, int):
        return None
    busy = False
    try:
        reply = wire.request(sock, {"op": "ping"}, PROBE_SECONDS)
    except TimeoutError:  # it accepts one caller at a time: busy with a run, or wedged
        if not warm_dir.alive(pid):
            return None
        reply, busy = state, True
    except (OSError, wire.ProtocolError):
        return None
    return _host_info(path, reply, busy)


def _host_info(path: Path, reply: dict[str, Any], busy: bool) -> HostInfo:
    role = str(reply.get("role", ""))
    name = str(reply.get("name", ""))
    kind = LIVE if role == LIVE else SNAPSHOT
    session = str(reply.get("session") or (name if kind == LIVE else reply.get("origin", "")))
    started, until = reply.get("started"), reply.get("idle_until")
    return HostInfo(
        session=session,
        harness=str(reply.get("harness") or reply.get("factory", "")),
        pid=int(reply.get("pid", 0)),
        kind=kind,
        snapshot=WARM_PREFIX + name if kind == SNAPSHOT else "",
        started=float(started) if isinstance(started, int | float) else None,
        idle_until=None if busy or not isinstance(until, int | float) else float(until),
        busy=busy,
        socket=str(reply.get("socket", "")),
        state=str(path),
    )

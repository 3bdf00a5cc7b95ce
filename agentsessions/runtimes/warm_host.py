"""The warm host process: keeps one harness instance alive in memory and serves it on a socket.

Started as ``python -m agentsessions.runtimes.warm_host launch '<json spec>'``. The
launcher forks the host (a new session, stdio to ``run/warm.log``), waits until the host
has built the harness and listens, prints one JSON status line and exits; so the caller
never owns a long-lived child and the host outlives it.

A host has one of two roles:

- **live**: serves a session's socket. Ops: ``ping``, ``describe``, ``run``,
  ``snapshot``, ``stop``. During ``run`` the real harness runs here; every sink call and
  history read is a frame sent back to the caller, which answers it, so every effect is
  recorded by the caller's controller before the harness sees its result.
- **snapshot** (frozen): a fork of a live host taken between runs. It never runs the
  harness; it blocks in ``accept`` on its own socket. Ops: ``ping``, ``thaw`` (become the
  live host of a session; the snapshot is consumed), ``clone`` (fork one frozen copy per
  child), ``stop``.

Invariants: one connection at a time, so a snapshot is always taken at a quiescent point
(never mid-run); sockets are 0600; a host that sees no connection for its idle timeout
exits and removes its socket and state file (a ``ping`` is not a caller: listing hosts never keeps
one alive, so the ``idle_until`` a ping reports holds); a forked copy unwinds its parent's stack by
exception (:class:`_Reincarnate`) so generations of suspend/resume never deepen the stack,
and it never removes the files of the host it was forked from.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import selectors
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NoReturn

from agentsessions.controller.spi import Harness
from agentsessions.errors import PlacementError
from agentsessions.runtimes import warm_dir
from agentsessions.runtimes import warm_wire as wire
from agentsessions.runtimes.refs import load_factory
from agentsessions.runtimes.warm_calls import (
    Channel,
    RemoteHistory,
    RemoteSink,
    SinkFailed,
)

CONTROL_SECONDS = 30.0
HISTORY_PAGE = 256
_STAY = "stay"
_EXIT = "exit"


@dataclass
class Host:
    """What this process serves, and where."""

    role: str  # "live" or "snapshot"
    name: str  # the session uid (live) or the snapshot id (snapshot)
    address: str  # the unix socket path it listens on
    state: str
    factory: str
    origin: str  # live: snapshot it was thawed from; snapshot: session it was taken from
    idle: float
    io_seconds: float
    harness: Harness
    listener: socket.socket | None = None
    inode: int = 0
    session: str = ""  # the session whose memory this is (a clone's is its child session)
    harness_id: str = ""  # the harness descriptor's id, for listings
    started: float = 0.0  # wall-clock time this incarnation began listening
    idle_from: float = 0.0  # monotonic time of the last caller (pings do not count)

    def idle_until(self) -> float:
        """The wall-clock time this host exits unless a caller comes first."""
        left = self.idle - (time.monotonic() - self.idle_from) if self.idle_from else self.idle
        return time.time() + max(0.0, left)

    def describe(self) -> dict[str, Any]:
        """The ``ping`` reply and the state file's content."""
        return {
            "protocol": wire.PROTOCOL,
            "pid": os.getpid(),
            "role": self.role,
            "name": self.name,
            "socket": self.address,
            "factory": self.factory,
            "origin": self.origin,
            "session": self.session,
            "harness": self.harness_id,
            "started": self.started,
            "idle_seconds": self.idle,
            "idle_until": self.idle_until(),
        }


class _Reincarnate(BaseException):
    """Raised in a freshly forked copy to unwind its parent's stack and serve as ``host``."""

    def __init__(self, host: Host, ready_fd: int) -> None:
        super().__init__(host.name)
        self.host = host
        self.ready_fd = ready_fd


# --------------------------------------------------------------------------- launch


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``launch <json spec>``; prints one JSON status line."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "launch":
        print("usage: python -m agentsessions.runtimes.warm_host launch SPEC", file=sys.stderr)
        return 2
    spec: dict[str, Any] = json.loads(args[1])
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        code = 1
        try:
            code = _daemon(spec, write_fd)
        finally:
            _flush_and_exit(code)
    os.close(write_fd)
    status = await_ready(read_fd, float(spec["start_seconds"]))
    print(json.dumps(status), flush=True)
    return 0 if status.get("ok") else 1


def _daemon(spec: dict[str, Any], ready_fd: int) -> int:
    os.setsid()
    _redirect_stdio(spec["log"])
    signal.signal(signal.SIGTERM, _terminate)
    signal.alarm(max(1, int(float(spec["start_seconds"]))))  # bounds a hanging factory
    try:
        harness = load_factory(spec["factory"])()
        harness_id = _harness_id(harness)
    except PlacementError as exc:
        announce(ready_fd, {"ok": False, "kind": "factory", "error": str(exc)})
        return 1
    except Exception as exc:
        _log(None, f"harness factory {spec['factory']} failed:\n{traceback.format_exc()}")
        announce(ready_fd, {"ok": False, "kind": "harness", "error": _describe_error(exc)})
        return 1
    finally:
        signal.alarm(0)
    host = Host(
        role="live",
        name=spec["session"],
        address=spec["socket"],
        state=spec["state"],
        factory=spec["factory"],
        origin="",
        idle=float(spec["idle_seconds"]),
        io_seconds=float(spec["io_seconds"]),
        harness=harness,
        session=spec["session"],
        harness_id=harness_id,
    )
    return run(host, ready_fd)


def _harness_id(harness: Harness) -> str:
    """The descriptor's id, or "" if describing fails (the first ``describe`` op reports it)."""
    try:
        return str(harness.describe().id)
    except Exception:
        return ""


def _redirect_stdio(log: str) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    with contextlib.suppress(OSError):
        if os.path.getsize(log) > warm_dir.LOG_LIMIT:
            flags |= os.O_TRUNC
    out = os.open(log, flags, 0o600)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(devnull)
    os.close(out)


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _flush_and_exit(code: int) -> NoReturn:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def announce(ready_fd: int, status: dict[str, Any]) -> bool:
    """Tell whoever waits on ``ready_fd`` how the start went; False if nobody listens."""
    try:
        os.write(ready_fd, json.dumps(status).encode("utf-8"))
        return True
    except OSError:
        return False
    finally:
        os.close(ready_fd)


def await_ready(read_fd: int, timeout: float) -> dict[str, Any]:
    """The status a starting host announces on ``read_fd`` (closed here), within ``timeout``."""
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {"ok": False, "kind": "start", "error": f"no word within {timeout:g} s"}
            if not _readable(read_fd, remaining):
                continue
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
    try:
        status = json.loads(b"".join(chunks))
    except json.JSONDecodeError:
        status = None
    if not isinstance(status, dict):
        return {"ok": False, "kind": "start", "error": "the host exited before it was ready"}
    return status


def _readable(fd: int, timeout: float) -> bool:
    with selectors.DefaultSelector() as selector:  # not select(): fds may exceed 1024
        selector.register(fd, selectors.EVENT_READ)
        return bool(selector.select(timeout))


# --------------------------------------------------------------------------- serving


def run(host: Host, ready_fd: int | None) -> int:
    """Serve as ``host`` (and as whatever it becomes) until told to stop or idle."""
    current: Host | None = host
    while current is not None:
        try:
            _listen(current)
        except OSError as exc:
            if ready_fd is not None:
                announce(ready_fd, {"ok": False, "kind": "storage", "error": str(exc)})
            return 1
        if ready_fd is not None:
            if not announce(ready_fd, {"ok": True, "pid": os.getpid()}):
                _cleanup(current)  # whoever started us gave up waiting
                return 1
            ready_fd = None
        try:
            following = _serve(current)
        except _Reincarnate as copy:  # we are a fresh fork: serve as the copy
            current, ready_fd = copy.host, copy.ready_fd
            continue
        except BaseException:
            _cleanup(current)
            raise
        if following is None:
            _cleanup(current)
        current = following
    return 0


def _listen(host: Host) -> None:
    if host.listener is None:
        host.listener, host.inode = _bind(host.address)
        host.started, host.idle_from = time.time(), time.monotonic()
        warm_dir.write_state(host.state, host.describe())


def _bind(path: str) -> tuple[socket.socket, int]:
    if os.path.exists(path):
        try:
            wire.connect(path, 1.0).close()
        except OSError:
            warm_dir.remove(path)  # nobody listens: a stale socket file
        else:
            raise OSError(errno.EADDRINUSE, f"another host already listens on {path}")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_mask = os.umask(0o177)
    try:
        sock.bind(path)
        os.chmod(path, 0o600)
        sock.listen(8)
        return sock, os.stat(path).st_ino
    except BaseException:
        sock.close()
        raise
    finally:
        os.umask(old_mask)


def _cleanup(host: Host) -> None:
    if host.listener is not None:
        host.listener.close()
        host.listener = None
    with contextlib.suppress(OSError):
        if host.inode and os.stat(host.address).st_ino == host.inode:
            warm_dir.remove(host.address)
    state = warm_dir.read_state(host.state)
    if state is not None and state.get("pid") == os.getpid():
        warm_dir.remove(host.state)


def _serve(host: Host) -> Host | None:
    """Accept connections one at a time; return the next incarnation, or None to exit."""
    assert host.listener is not None
    host.idle_from = time.monotonic()
    while True:
        left = host.idle - (time.monotonic() - host.idle_from)
        if left <= 0:
            _log(host, f"idle for {host.idle:g} s; exiting")
            return None
        host.listener.settimeout(left)
        try:
            conn, _ = host.listener.accept()
        except TimeoutError:
            continue  # the loop's check decides: only a real caller resets the clock
        with conn:
            try:
                outcome = _handle(host, conn)
            except Exception as exc:
                _log(host, f"connection failed: {_describe_error(exc)}")
                continue
        if outcome == _EXIT:
            return None
        if isinstance(outcome, Host):
            return outcome


def _handle(host: Host, conn: socket.socket) -> str | Host:
    frame = wire.recv(conn, CONTROL_SECONDS)
    if frame.get("op") != "ping":
        host.idle_from = time.monotonic()
    try:
        return _dispatch(host, conn, frame)
    finally:
        if frame.get("op") != "ping":
            host.idle_from = time.monotonic()  # the idle clock starts when the caller is done


def _dispatch(host: Host, conn: socket.socket, frame: wire.Frame) -> str | Host:
    ops = _LIVE_OPS if host.role == "live" else _SNAPSHOT_OPS
    handler = ops.get(str(frame.get("op")))
    if handler is None:
        message = f"op {frame.get('op')!r} is not served by a {host.role} host"
        wire.send(conn, {"ok": False, "error": message})
        return _STAY
    return handler(host, conn, frame)


def _ping(host: Host, conn: socket.socket, frame: wire.Frame) -> str | Host:
    wire.send(conn, {"ok": True, **host.describe()})
    return _STAY


def _stop(host: Host, conn: socket.socket, frame: wire.Frame) -> str | Host:
    with contextlib.suppress(OSError):
        wire.send(conn, {"ok": True, "pid": os.getpid()})
    return _EXIT


def _describe(host: Host, conn: socket.socket, frame: wire.Frame) -> str | Host:
    try:
        descriptor = wire.descriptor_to_wire(host.harness.describe())
    except Exception as exc:
        wire.send(conn, _failure(exc))
        return _STAY
    wire.send(conn, {"ok": True, "descriptor": descriptor})
    return _STAY


def _snapshot(host: Host, conn: socket.socket, frame: wire.Frame) -> str | Host:
    copy = _copy_of(host, frame["target"], origin=host.name)
    try:
        pid = _fork_copy(host, copy)
    except Exception as exc:
        wire.send(conn, _failure(exc))
        return _STAY
    wire.send(conn, {"ok": True, "pid": pid})
    return _STAY


def _clone(host: Host, conn: socket.socket, frame: wire.Frame) -> str | Host:
    pids: list[int] = []
    try:
        for target in frame["targets"]:
            pids.append(_fork_copy(host, _copy_of(host, target, origin=host.origin)))
    except Exception as exc:
        for pid in pids:  # all or nothing: end the copies already made
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        wire.send(conn, _failure(exc))
        return _STAY
    wire.send(conn, {"ok": True, "pids": pids})
    return _STAY


def _thaw(host: Host, conn: socket.socket, frame: wire.Frame) -> str | Host:
    target = frame["target"]
    live = replace(
        host,
        role="live",
        name=str(frame["session"]),
        session=str(frame["session"]),
        address=str(target["socket"]),
        state=str(target["state"]),
        origin=host.name,
        listener=None,
        inode=0,
    )
    try:
        _listen(live)
    except OSError as exc:
        wire.send(conn, _failure(exc))
        return _STAY
    _cleanup(host)  # the snapshot is consumed: this process is now the live host
    with contextlib.suppress(OSError):  # a caller that left finds the live host by `origin`
        wire.send(conn, {"ok": True, **live.describe()})
    return live


def _copy_of(host: Host, target: dict[str, Any], *, origin: str) -> Host:
    return replace(
        host,
        role="snapshot",
        name=str(target["id"]),
        session=str(target.get("session") or host.session),
        address=str(target["socket"]),
        state=str(target["state"]),
        origin=origin,
        listener=None,
        inode=0,
    )


def _fork_copy(host: Host, copy: Host) -> int:
    """Fork a frozen copy of this process that serves as ``copy``; its pid once it listens.

    Double fork: the intermediate exits at once, so the copy is nobody's child here and
    outlives this host; the copy reports readiness through a pipe.
    """
    read_fd, write_fd = os.pipe()
    first = os.fork()
    if first == 0:
        _become_copy(host, copy, read_fd, write_fd)
    os.close(write_fd)
    os.waitpid(first, 0)
    status = await_ready(read_fd, CONTROL_SECONDS)
    if not status.get("ok"):
        raise RuntimeError(f"warm copy {copy.name} did not start: {status.get('error')}")
    return int(status["pid"])


def _become_copy(host: Host, copy: Host, read_fd: int, write_fd: int) -> NoReturn:
    try:
        os.close(read_fd)
        second = os.fork()
    except BaseException:
        os._exit(1)
    if second != 0:
        os._exit(0)
    if host.listener is not None:
        host.listener.close()  # the parent's socket: close our copy, never unlink it
    raise _Reincarnate(copy, write_fd)


# --------------------------------------------------------------------------- run


def _run(host: Host, conn: socket.socket, frame: wire.Frame) -> str | Host:
    channel = Channel(conn, host.io_seconds)
    start = wire.start_from_wire(frame["start"], RemoteHistory(channel))
    try:
        host.harness.run(start, RemoteSink(channel))
    except Exception as exc:
        if channel.broken:
            _log(host, f"caller went away during a run: {_describe_error(exc)}")
            return _STAY
        _log(host, f"harness run failed:\n{traceback.format_exc()}")
        reply = {"done": False, **_failure(exc)}
        if isinstance(exc, SinkFailed):
            reply["sink_call"] = exc.call
        wire.send(conn, reply)
        return _STAY
    if not channel.broken:
        wire.send(conn, {"done": True})
    return _STAY


# --------------------------------------------------------------------------- helpers


def _failure(exc: BaseException) -> dict[str, Any]:
    return {"ok": False, "error": _describe_error(exc), "exception": type(exc).__name__}


def _describe_error(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _log(host: Host | None, message: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    who = f"{host.role} {host.name}" if host is not None else "starting"
    print(f"{stamp} warm host {os.getpid()} [{who}]: {message}", file=sys.stderr, flush=True)


_Handler = Callable[[Host, socket.socket, wire.Frame], "str | Host"]
_LIVE_OPS: dict[str, _Handler] = {
    "ping": _ping,
    "describe": _describe,
    "run": _run,
    "snapshot": _snapshot,
    "stop": _stop,
}
_SNAPSHOT_OPS: dict[str, _Handler] = {
    "ping": _ping,
    "thaw": _thaw,
    "clone": _clone,
    "stop": _stop,
}

if __name__ == "__main__":
    sys.exit(main())

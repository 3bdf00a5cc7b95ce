"""The warm hosts of a home as processes: start one, end one, end them all.

A host is started by running the launcher command and reading the one JSON status line it
prints (:func:`start_host`); it is ended by asking it to stop, then SIGTERM, then SIGKILL,
each wait bounded, and only a pid whose command line is the warm host module is signalled
(:func:`end_host`). :func:`shutdown_all` ends every host and frozen snapshot a home's run
directory lists. :class:`~.warm.WarmRuntime` drives these; the CLI's ``compute`` commands
and tests end hosts through them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from agentsessions.errors import HarnessError, PlacementError, StorageError, UnavailableError
from agentsessions.runtimes import warm_dir
from agentsessions.runtimes import warm_wire as wire
from agentsessions.runtimes.warm_dir import RunDir

COLD_HINT = "resume the session cold: the journal replays; in-memory harness state is lost"


def _host_env() -> dict[str, str]:
    """This process's environment, with its ``sys.path`` so the host imports the same code."""
    env = dict(os.environ)
    paths = [entry or os.getcwd() for entry in sys.path]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def start_host(command: list[str], start_seconds: float) -> dict[str, Any]:
    import subprocess  # only a start of a host runs one: a turn on a live host (or none) never

    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=start_seconds + 10,
            env=_host_env(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"kind": "start", "error": f"the host did not start within {start_seconds:g} s"}
    except OSError as exc:
        return {"kind": "start", "error": f"cannot run {command[0]}: {exc}"}
    lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        status = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        status = None
    if not isinstance(status, dict):
        detail = done.stderr.decode("utf-8", "replace").strip()[-500:]
        return {"kind": "start", "error": f"the host launcher failed: {detail or done.returncode}"}
    return status


def launch_error(status: dict[str, Any], session: str, log: Path) -> Exception:
    kind, error = status.get("kind"), str(status.get("error"))
    if kind == "factory":
        return PlacementError(error, session=session)
    if kind == "harness":
        return HarnessError(f"the harness factory failed: {error}", session=session)
    if kind == "storage":
        return StorageError(f"the warm host cannot listen: {error}", session=session)
    return UnavailableError(
        f"cannot start a warm host for session {session}: {error}",
        session=session,
        hint=f"see {log}",
    )


def host_gone(session: str) -> UnavailableError:
    return UnavailableError(
        f"no live warm host serves session {session or '?'} (stopped, idle timeout, killed "
        f"or rebooted)",
        session=session or None,
        hint=COLD_HINT,
    )


def end_host(socket_path: str, state_path: str, pid: int, timeout: float = 10.0) -> None:
    """End host ``pid``: ask it to stop, then SIGTERM, then SIGKILL; each wait bounded.

    Signals go only to a pid whose command line is the warm host module; the socket and
    state files are removed if the host could not remove them itself.
    """
    if warm_dir.alive(pid):
        with contextlib.suppress(OSError, wire.ProtocolError):
            wire.request(socket_path, {"op": "stop"}, min(timeout, 5.0))
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if warm_dir.wait_gone(pid, timeout) or not warm_dir.is_host(pid):
                break
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        warm_dir.wait_gone(pid, timeout)
    warm_dir.reap(pid)
    state = warm_dir.read_state(state_path)
    if state is None or state.get("pid") == pid:
        warm_dir.remove(state_path)
        _remove_dead_socket(socket_path)


def _remove_dead_socket(path: str) -> None:
    if not os.path.exists(path):
        return
    try:
        wire.connect(path, 1.0).close()
    except OSError:
        warm_dir.remove(path)


def shutdown_all(home: Path, timeout: float = 10.0) -> list[int]:
    """End every warm host and frozen snapshot of ``home``; the pids that were ended."""
    ended: list[int] = []
    for path, state in RunDir(home).states():
        pid = state.get("pid")
        if isinstance(pid, int) and pid > 0:
            end_host(str(state.get("socket", "")), str(path), pid, timeout)
            ended.append(pid)
        else:
            warm_dir.remove(path)
    return ended

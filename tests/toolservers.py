"""Tool servers the executor tests start: the shipped unix reference server, and fakes
that misbehave (a server answering garbage, one that never answers)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MCP_SERVER = ROOT / "tests" / "mcp_server.py"


def short_dir() -> str:
    """A fresh directory with a short path (a socket path is at most 107 bytes)."""
    return tempfile.mkdtemp(prefix="as-ux-", dir="/tmp")


@contextmanager
def unix_server(*flags: str) -> Iterator[str]:
    """The reference server (``python3 -m agentsessions.tools.unixserver``) on a fresh
    socket; yields the socket path once the server says it listens."""
    folder = short_dir()
    path = os.path.join(folder, "t.sock")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentsessions.tools.unixserver", path, *flags],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline()  # blocks until it listens (or exits: "")
        assert ready.strip() == f"ready {path}", f"server did not start: {ready!r}"
        yield path
    finally:
        proc.terminate()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def fake_server(answer: bytes | None) -> Iterator[str]:
    """A socket that reads one request and writes ``answer`` raw (None: never answers,
    holding the connection until the test ends)."""
    folder = short_dir()
    path = os.path.join(folder, "f.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    done = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(1 << 20)
            if answer is None:
                held.append(conn)  # no answer: the client's timeout is what ends it
                continue
            conn.sendall(answer)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        done.set()
        listener.close()
        for conn in held:
            conn.close()
        shutil.rmtree(folder, ignore_errors=True)

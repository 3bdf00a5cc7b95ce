"""The ``follow`` command: a session's records, then each new one as it commits.

``agentsessions follow SESSION [--from SEQ] [--json] [--idle-exit SECONDS]`` prints every
record from SEQ (one line each: seq, kind, execution, short hash, summary, the columns of
``log``; with ``--json`` the same agentsessions.v1.LogRecord lines as ``log --json``), then
each record any process on this machine commits, as it commits. The waiting is done by
:meth:`Sessions.follow` (inotify on Linux, a backoff poll elsewhere), never a busy loop.

How it ends, as ``tail -f`` does: Ctrl-C (SIGINT) ends it quietly with exit status 130,
the status a shell gives a command killed by SIGINT; a reader that hangs up (``| head``)
ends it quietly with status 0, also while it waits for a record (:class:`ReaderWatch`);
``--idle-exit SECONDS`` ends it with status 0 once no record
arrived for that long (scripts and the README tour). Resume after the last printed seq N
with ``--from N+1``: nothing is printed twice or skipped.
"""

from __future__ import annotations

import os
import select
import signal
import stat
import sys
import threading
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentsessions.cli.context import EXIT_INTERRUPTED, command_state, open_engine
from agentsessions.cli.options import JsonOpt, SessionArg, session_uid
from agentsessions.cli.root import typer_app as app

if TYPE_CHECKING:
    from agentsessions.sessions.values import LogRecord


def follow_line(record: LogRecord) -> str:
    """One record as ``log`` shows it, on one line: seq, kind, execution, hash, summary."""
    from agentsessions.cli.recordview import log_line

    return log_line(record)


def _stdout_failed() -> bool:
    """True once stdout refused a write (cli/stream.py's guard keeps the failure)."""
    return bool(getattr(sys.stdout, "failed", False))


class ReaderGone(BaseException):
    """stdout's reader hung up while follow waited (a BaseException, as KeyboardInterrupt:
    no ``except Exception`` on the way up may take it for an error of the wait)."""


class ReaderWatch:
    """Ends an idle follow whose reader hung up (``follow S | head -1``), as ``tail -f`` does.

    Writes happen only when a record arrives, so a closed pipe would otherwise go unnoticed
    for as long as the session is idle. A daemon thread sleeps in ``poll`` on stdout's
    descriptor (no events asked: the kernel reports POLLERR/POLLHUP, a pipe's write end
    whose reader closed, a socket whose peer did) and, when it fires, sends SIGPIPE to the
    main thread, whose handler raises :class:`ReaderGone` out of the wait. Only a pipe or
    socket is watched (a terminal or a file has no reader to lose); SIGPIPE's previous
    disposition is put back at the end.
    """

    def __init__(self) -> None:
        self._previous: Any = None
        self._installed = False
        self._done = threading.Event()

    def __enter__(self) -> ReaderWatch:
        fd = _pipe_fd()
        if fd is None or threading.current_thread() is not threading.main_thread():
            return self
        self._previous = signal.signal(signal.SIGPIPE, _reader_gone)
        self._installed = True
        main = threading.main_thread().ident
        assert main is not None
        threading.Thread(target=self._watch, args=(fd, main), daemon=True).start()
        return self

    def _watch(self, fd: int, main: int) -> None:
        poller = select.poll()
        poller.register(fd, 0)  # POLLERR, POLLHUP and POLLNVAL are always reported
        while not self._done.is_set():
            if poller.poll(1000):  # bounded, so the thread ends soon after the command
                if not self._done.is_set():
                    signal.pthread_kill(main, signal.SIGPIPE)
                return

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._done.set()
        if self._installed:
            signal.signal(signal.SIGPIPE, self._previous)
            self._installed = False


def _reader_gone(signum: int, frame: FrameType | None) -> None:
    raise ReaderGone


def _pipe_fd() -> int | None:
    """stdout's descriptor if it is a pipe or a socket, else None."""
    try:
        fd = sys.stdout.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError):  # replaced or closed stdout: nothing to watch
        return None
    return fd if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) else None


@app.command(
    epilog="Examples: agentsessions follow sess-0123456789abcdef01234567 | "
    "agentsessions follow sess-0123456789abcdef01234567 --from 42 --json"
)
def follow(
    ctx: typer.Context,
    session: SessionArg,
    from_seq: Annotated[int, typer.Option("--from", min=1, help="First seq to show.")] = 1,
    idle_exit: Annotated[
        float | None,
        typer.Option(
            "--idle-exit",
            min=0.0,
            metavar="SECONDS",
            help="Exit 0 once no new record arrived for SECONDS (default: follow forever).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print a session's records from --from on, then each new one as it commits.

    Runs until Ctrl-C (exit 130, quietly, as tail -f), until its reader hangs up (a closed
    pipe, noticed while idle too: exit 0) or, with --idle-exit, until no record arrived for
    that long (exit 0). With --json, prints one agentsessions.v1.LogRecord
    in proto3-JSON per line, as log --json does. Resume after seq N with --from N+1.
    """
    state = command_state(ctx, as_json)
    uid = session_uid(session)
    try:
        with ReaderWatch(), open_engine(state, read=True) as engine:
            records = engine.follow(uid, from_seq=from_seq, idle_timeout=idle_exit)
            try:
                for record in records:
                    if state.json:
                        sys.stdout.buffer.write(record.to_wire_json() + b"\n")
                    else:
                        sys.stdout.write(follow_line(record) + "\n")
                    sys.stdout.flush()
                    if _stdout_failed():
                        return  # the reader hung up: the guard ends the command quietly
            finally:
                close = getattr(records, "close", None)
                if close is not None:
                    close()  # release the watch and the segment descriptors now
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except ReaderGone:
        return  # quietly, status 0

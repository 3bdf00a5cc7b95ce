"""Ctrl-C while a turn runs (``exec``, ``resume``): cancel it, as ``agentsessions cancel`` does.

The first SIGINT asks the turn to stop at its next effect boundary through the engine's
``cancel`` (the durable cancel request of :mod:`agentsessions.controller.cancel` locally, the
Cancel RPC over ``--server``), says so on stderr at once, and lets the command go on
rendering the turn: it ends with LIFECYCLE CANCEL + END CANCELED, and the command exits 130
once that END is durable (:data:`~agentsessions.cli.context.EXIT_INTERRUPTED`). A second SIGINT
exits 130 at once, leaving the turn open for ``cancel`` or ``resume`` to close: its cancel
request stands, so a turn still running (over ``--server``) stops at its next boundary, and
one whose process this exit ended (a local ``exec``) is closed as CANCELED by either.

Invariants: the signal handler never raises and never blocks: it writes one line and starts
one daemon thread that makes the request (the request needs the session's uid, which a new
session learns from its first frame, and the turn's START, which may not be journaled yet:
the thread asks again until the turn is open or the stream has ended). The previous SIGINT
handler is put back when the turn's rendering ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

from agentsessions.cli.context import EXIT_INTERRUPTED, PROG
from agentsessions.errors import InvalidExecutionLogError, UnavailableError

if TYPE_CHECKING:
    from agentsessions.sessions.api import Sessions

_RETRY_SECONDS = 0.05


class TurnInterrupt:
    """A SIGINT handler for the duration of one turn's rendering (a context manager).

    ``fired`` says whether Ctrl-C was pressed; :meth:`seen` tells it the session's uid once
    it is known (a new session's first frame).
    """

    def __init__(self, engine: Sessions, uid: str | None, *, quiet: bool = False) -> None:
        self._engine = engine
        self._uid = uid
        self._known = threading.Event()
        if uid is not None:
            self._known.set()
        self._ended = threading.Event()  # the turn's stream ended: stop asking
        self._quiet = quiet
        self._previous: Any = None
        self._installed = False
        self.fired = 0

    def seen(self, uid: str) -> None:
        """The session's uid (from the turn's first frame)."""
        if self._uid is None:
            self._uid = uid
            self._known.set()

    def __enter__(self) -> TurnInterrupt:
        # signal handlers can only be set from the main thread (a library caller's thread
        # or a test runner may drive the CLI elsewhere: then Ctrl-C keeps its default)
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
            self._installed = True
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._ended.set()
        self._known.set()  # wake a request thread still waiting for the uid
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.fired += 1
        if self.fired == 1:
            self._say(
                "interrupt: canceling the turn at its next effect boundary "
                "(Ctrl-C again to leave it running)"
            )
            threading.Thread(target=self._request, name="interrupt-cancel", daemon=True).start()
            return
        where = self._uid or "SESSION"
        self._say(
            "interrupted: leaving the turn open with its cancel request standing (a turn "
            f"still running stops at its next boundary); {PROG} cancel {where} closes it now, "
            f"{PROG} resume {where} closes it as canceled"
        )
        with contextlib.suppress(OSError, ValueError):  # a closed stdout: exit all the same
            sys.stdout.flush()
        # at once: the turn's thread (a local exec runs it in this process) is not waited
        # for; its journal keeps every committed record and the session's lock is released
        # with the process
        os._exit(EXIT_INTERRUPTED)

    def _say(self, text: str) -> None:
        try:
            sys.stderr.write(f"\n{PROG}: {text}\n")
            sys.stderr.flush()
        except (OSError, ValueError):  # stderr gone: the exit code still tells
            pass

    def _request(self) -> None:
        """Ask the engine to cancel the session's running turn, until it is asked or over."""
        self._known.wait()
        while not self._ended.is_set() and self._uid is not None:
            try:
                self._engine.cancel(self._uid, wait=0.0, reason="USER")
                return  # it was open and is canceled already
            except UnavailableError:
                return  # asked: the turn stops at its next boundary
            except InvalidExecutionLogError:
                # nothing open yet (START not journaled) or it ended meanwhile: the stream's
                # end says which, so ask again until then
                self._ended.wait(_RETRY_SECONDS)
            except Exception as exc:  # reported: a daemon thread has no one to raise to
                if not self._ended.is_set():  # not the engine closing after the turn's end
                    self._say(f"error: could not cancel the turn: {exc}")
                return

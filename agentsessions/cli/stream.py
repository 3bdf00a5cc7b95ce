"""The output sink: how a running turn is shown, and the one place write failures end.

Invariants: stdout carries only the assistant's text (model deltas as they stream, or a
whole OUTPUT when nothing streamed), so ``agentsessions exec ... | tool`` gets the answer
byte for byte; on a terminal its control characters are escaped (:func:`terminal_text`);
diagnostics (the new session's uid, one line per committed record, the turn's summary) go
to stderr, each flushed at once; a quiet printer (``--json``) prints nothing.

Rendering is never on a command's failure path. While a command runs, :func:`guarded`
puts ``sys.stdout`` and ``sys.stderr`` behind :class:`GuardedStream`, which absorbs every
write failure (a closed descriptor, a broken pipe, ENOSPC, EIO): the first one is kept,
the stream drops what follows, and the turn goes on to its END. At the end
:meth:`OutputGuard.exit_code` decides: a broken pipe on stdout ends the command quietly
with its own exit code (as Unix tools do: nothing is said about the pipe; stderr's
diagnostics, such as the record lines of ``exec``, go on as usual); any other stdout
failure of a command that otherwise succeeded is one error line on stderr and exit 13; a
command that failed on its own keeps its error line and exit code; stderr failures never
change the outcome.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

TYPE_CHECKING = False  # not typing's: importing typing costs a bare --help ~3 ms

if TYPE_CHECKING:
    from typing import IO, Any

    from agentsessions.sessions.values import LogRecord as Record

EXIT_OUTPUT_FAILED = 13  # StorageError's code: the OS refused the write (ENOSPC, EIO)


class OutputGuard:
    """What happened to one command's stdout and stderr, and what it made durable."""

    def __init__(self) -> None:
        self.failures: dict[str, OSError] = {}  # "stdout"/"stderr" -> the first write error
        self.done = ""  # e.g. "the turn completed and is journaled (seq 7)"

    def exit_code(self, code: int) -> int:
        """The command's exit status once its output failures are accounted for."""
        failure = self.failures.get("stdout")
        if failure is None or failure.errno == errno.EPIPE or code != 0:
            return code
        from agentsessions.cli.render import error_text

        why = failure.strerror or str(failure)
        message = f"cannot write the output: {why}" + (f"; {self.done}" if self.done else "")
        sys.stderr.write(error_text(message))
        sys.stderr.flush()
        return EXIT_OUTPUT_FAILED


_current: OutputGuard | None = None


def note_done(text: str) -> None:
    """Say what the running command made durable, for the line a failed stdout gets."""
    if _current is not None:
        _current.done = text


class GuardedStream:
    """A text stream that never raises on write or flush; it keeps the first failure.

    ``inner`` None is a descriptor that was closed when the process started.
    """

    def __init__(self, inner: IO[str] | None, name: str, guard: OutputGuard) -> None:
        self._inner = inner
        self._name = name
        self._guard = guard
        self._buffer = _GuardedBuffer(self, getattr(inner, "buffer", None))

    @property
    def failed(self) -> bool:
        """True once a write or flush failed: nothing more is written."""
        return self._name in self._guard.failures

    def fail(self, exc: BaseException) -> None:
        """Keep the first failure (a ValueError of a closed file counts as EBADF)."""
        if not isinstance(exc, OSError):
            exc = OSError(errno.EBADF, f"{self._name} is closed")
        self._guard.failures.setdefault(self._name, exc)

    def write(self, text: str) -> int:
        """Write ``text``, or drop it once the stream has failed."""
        if self._inner is None:
            self.fail(OSError(errno.EBADF, f"{self._name} is closed"))
        if not self.failed:
            try:
                self._inner.write(text)  # type: ignore[union-attr]
            except (OSError, ValueError) as exc:
                self.fail(exc)
        return len(text)

    def flush(self) -> None:
        """Flush, absorbing a failure like :meth:`write`."""
        if self._inner is not None and not self.failed:
            try:
                self._inner.flush()
            except (OSError, ValueError) as exc:
                self.fail(exc)

    def isatty(self) -> bool:
        """False for a closed or failed stream (nothing to draw on)."""
        try:
            return self._inner is not None and not self.failed and self._inner.isatty()
        except (OSError, ValueError):
            return False

    @property
    def buffer(self) -> _GuardedBuffer:
        """The binary side, guarded the same way (``log --json`` writes bytes)."""
        return self._buffer

    def __getattr__(self, name: str) -> Any:
        # encoding, errors, fileno, writable ...: as the real stream has them
        if self._inner is None:
            raise AttributeError(name)
        return getattr(self._inner, name)


class _GuardedBuffer:
    """The binary buffer of a :class:`GuardedStream`, sharing its failure."""

    def __init__(self, text: GuardedStream, inner: IO[bytes] | None) -> None:
        self._text = text
        self._inner = inner

    def write(self, data: bytes) -> int:
        if self._inner is None:
            self._text.fail(OSError(errno.EBADF, "the stream is closed"))
        if not self._text.failed:
            try:
                self._inner.write(data)  # type: ignore[union-attr]
            except (OSError, ValueError) as exc:
                self._text.fail(exc)
        return len(data)

    def flush(self) -> None:
        if self._inner is not None and not self._text.failed:
            try:
                self._inner.flush()
            except (OSError, ValueError) as exc:
                self._text.fail(exc)

    def __getattr__(self, name: str) -> Any:
        if self._inner is None:
            raise AttributeError(name)
        return getattr(self._inner, name)


@contextmanager
def guarded() -> Iterator[OutputGuard]:
    """Run a command with stdout and stderr behind :class:`GuardedStream`; restore them.

    A descriptor 0-2 closed at start is first pointed at /dev/null, so no file the store
    opens (a lock, a segment) can become fd 1 or 2 and receive output meant for a terminal.
    """
    global _current
    for fd in (0, 1, 2):
        _occupy(fd)
    guard = OutputGuard()
    saved, _current = (sys.stdout, sys.stderr), guard
    sys.stdout = GuardedStream(saved[0], "stdout", guard)
    sys.stderr = GuardedStream(saved[1], "stderr", guard)
    try:
        yield guard
    finally:
        sys.stdout, sys.stderr = saved
        _current = None
        for stream, name in zip(saved, ("stdout", "stderr"), strict=True):
            if name in guard.failures:
                _silence(stream)


def _occupy(fd: int) -> None:
    try:
        os.fstat(fd)
    except OSError:
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)


def _silence(stream: IO[str] | None) -> None:
    """Point a failed process stream at /dev/null, as the Python docs advise for SIGPIPE,
    so the interpreter's flush at exit drops what is still buffered instead of printing
    "Exception ignored"."""
    if stream is None or all(stream is not s for s in (sys.__stdout__, sys.__stderr__)):
        return  # a test runner's stream: nothing flushes it at exit
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)
        stream.flush()
    except (OSError, ValueError):
        pass


def output_text(event: dict[str, Any]) -> str:
    """The text parts of an OUTPUT event's message, concatenated."""
    parts = event.get("message", {}).get("parts", [])
    return "".join(str(p.get("text", {}).get("text", "")) for p in parts if "text" in p)


def record_line(record: Record) -> str:
    """One journaled record as a readable line: seq, kind and a short summary."""
    from agentsessions.cli.recordview import event_kind, summarize_event
    from agentsessions.cli.render import one_line

    event = record.event
    kind = event_kind(event)
    summary = summarize_event(event).removeprefix(kind + " ")
    gap = " " if len(kind) >= 16 else ""  # APPROVAL_REQUEST fills the column
    return one_line(f"{record.seq:>6}  {kind:<16}{gap}{summary}")


def terminal_text(text: str) -> str:
    """Assistant text as a terminal may show it: line breaks and tabs kept, every other
    control or format character escaped (``\\x1b``), so a model's answer cannot drive the
    terminal; a pipe or file still gets the answer byte for byte."""
    from agentsessions.cli.render import one_line

    return "\n".join(
        "\t".join(one_line(cell) for cell in line.split("\t")) for line in text.split("\n")
    )


def _on_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except (OSError, ValueError):
        return False


class TurnPrinter:
    """Streams a running turn: model deltas and outputs to stdout, record lines to stderr.

    Quiet (``--json``) printers print nothing; the command prints one document at the end.
    """

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self._streamed = False  # deltas arrived for the OUTPUT not yet recorded
        self._open_line = False  # stdout holds text without its final newline

    def note(self, text: str) -> None:
        """A diagnostic line on stderr (the new session's uid, what resume did...)."""
        if not self.quiet:
            self._end_line()
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

    def delta(self, text: str) -> None:
        """Partial assistant text, written as it arrives (never journaled)."""
        if self.quiet or not text:
            return
        sys.stdout.write(terminal_text(text) if _on_terminal(sys.stdout) else text)
        sys.stdout.flush()
        self._streamed = True
        self._open_line = not text.endswith("\n")

    def record(self, record: Record) -> None:
        """A record the controller just committed."""
        if self.quiet:
            return
        event = record.event
        if event.get("kind") == "EVENT_OUTPUT":
            if not self._streamed:
                self.delta(output_text(event))
            self._streamed = False
        self.note(record_line(record))

    def _end_line(self) -> None:
        if self._open_line:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self._open_line = False

"""How a running turn is shown: the assistant's text on stdout, each record on stderr.

Invariants: stdout carries only the assistant's text (model deltas as they stream, or a
whole OUTPUT when nothing streamed), so ``agentsessions exec ... | tool`` gets the answer;
diagnostics (the new session's uid, one line per committed record, the turn's summary) go
to stderr, each flushed at once; a quiet printer (``--json``) prints nothing.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentsessions.journal.records import Record


def output_text(event: dict[str, Any]) -> str:
    """The text parts of an OUTPUT event's message, concatenated."""
    parts = event.get("message", {}).get("parts", [])
    return "".join(str(p.get("text", {}).get("text", "")) for p in parts if "text" in p)


def record_line(record: Record) -> str:
    """One journaled record as a readable line: seq, kind and a short summary."""
    from agentsessions.cli.render import event_kind, one_line, summarize_event

    event = record.event
    kind = event_kind(event)
    summary = summarize_event(event).removeprefix(kind + " ")
    return one_line(f"{record.seq:>6}  {kind:<16}{summary}")


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
        sys.stdout.write(text)
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

"""A session's token usage: the totals of its EVENT_USAGE records (``get`` shows them).

Each model call whose provider reported token counts is followed in the journal by one
EVENT_USAGE (``agentsessions.v1.Usage``: int64 counts as strings, zero counts omitted).

Cost: the totals are summed from the records when ``get`` asks, in one streaming pass that
holds one record at a time; nothing is kept per turn, so a turn's cost does not grow with
the session (the project's rule), and only ``get`` pays for reading the journal. Every
record counts, failed turns' calls included: they were made and billed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from agentsessions.errors import JournalError, SessionKeyError
from agentsessions.valueclass import value

if TYPE_CHECKING:
    from agentsessions.sessions.api import Sessions

COUNTS = ("input_tokens", "output_tokens", "reasoning_tokens")


class _Record(Protocol):
    @property
    def event(self) -> Any: ...


@value(frozen=True)
class UsageTotals:
    """Token counts summed over a session's USAGE records, and how many there were."""

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    records: int = 0

    def to_json(self) -> dict[str, int]:
        """The ``usage`` object of ``get --json`` (plain JSON numbers)."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "records": self.records,
        }

    def text(self) -> str:
        """One line for ``get``: ``12 input, 3 output tokens (1 model call)``; ``-`` if none."""
        if not self.records:
            return "-"
        calls = f"{self.records} model call" + ("" if self.records == 1 else "s")
        reasoning = f", {self.reasoning_tokens} reasoning" if self.reasoning_tokens else ""
        return f"{self.input_tokens} input, {self.output_tokens} output{reasoning} tokens ({calls})"


def usage_totals(records: Iterable[_Record]) -> UsageTotals:
    """The totals of the EVENT_USAGE records among ``records`` (a counts field that is not
    a whole number is skipped: the journal's schema already refused such a record)."""
    sums = dict.fromkeys(COUNTS, 0)
    seen = 0
    for record in records:
        event = record.event
        if event.get("kind") != "EVENT_USAGE":
            continue
        usage = event.get("usage") or {}
        seen += 1
        for name in COUNTS:
            try:
                sums[name] += int(usage.get(name, 0) or 0)
            except (TypeError, ValueError):
                continue
    return UsageTotals(**sums, records=seen)


def readable_usage(engine: Sessions, uid: str) -> tuple[UsageTotals | None, str]:
    """The totals of session ``uid``'s records, or ``(None, why)`` when its records cannot
    be read here: encrypted without the key, or damaged (``get`` still shows the metadata,
    and ``verify`` or a keyed read says more)."""
    try:
        return usage_totals(engine.read(uid)), ""
    except SessionKeyError:
        return None, "unknown (the records are encrypted: give the key to read them)"
    except JournalError:
        return None, "unknown (the records are damaged: see agentsessions verify)"

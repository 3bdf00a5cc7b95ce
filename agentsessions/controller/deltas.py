"""What a turn's delta callback may be: :class:`DeltaSink`, an ``on_delta`` that makes its
own per-delta function with the turn's cancel check folded in.

A module of its own, importing nothing of the controller: the engine's frames implement it,
and an engine that only lists sessions imports them without the controller's seams.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable


class DeltaSink(ABC):
    """An ``on_delta`` that makes its own per-delta function with the turn's cancel check
    folded in (:meth:`checked`), and never raises from a delta: it isolates what it calls,
    or calls nothing that can fail. A model streams a delta per word, so a layer of calls
    per delta is a measurable share of a streamed turn; the controller does not wrap one
    again (:func:`~.live.isolated`)."""

    @abstractmethod
    def __call__(self, text: str) -> None:
        """Take one delta (one that is not part of a checked stream)."""

    @abstractmethod
    def checked(self, check: Callable[[], None], every: float) -> Callable[[str], None]:
        """:func:`~.cancel.checked_stream` of this sink as ONE function: ``check`` (which
        raises TurnCanceledError on a cancel) at most once per ``every`` seconds, then the
        delta."""

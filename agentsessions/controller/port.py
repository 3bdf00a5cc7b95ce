"""What the session operations beside a turn use of a controller: one small Protocol.

Cancel (:mod:`.cancel`), suspend, resume and fork (:mod:`.lifecycle`) and a fresh start
(:mod:`.freshstart`) act as a session's single writer through the controller that runs its
turns, and :class:`~agentsessions.controller.controller.Controller` calls them. They name
the controller by this Protocol, not by its class, so the imports point one way only:
``controller -> cancel/lifecycle/freshstart -> port``, never back (a test in
``tests/unit/test_import_graph.py`` counts annotation-only imports too).

Invariant: this module imports nothing of ``controller.py`` nor of the operations that
take a :class:`ControllerPort`. ``Controller`` satisfies it structurally; mypy checks so
wherever ``Controller`` calls an operation with ``self``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.store import Store

from .held import HeldWriter
from .registry import Registry
from .spi import Harness, HarnessDescriptor, Runtime


class ControllerPort(Protocol):
    """The part of a controller that cancel, suspend, resume, fork and fresh start use.

    The last three members are the controller's own single-writer machinery, public
    because these operations (the controller's, kept in modules of their own) use them;
    the engine uses :meth:`session_writer` too, to commit a resolution as the writer.
    """

    @property
    def store(self) -> Store:
        """The store whose sessions the controller drives."""
        ...

    @property
    def harnesses(self) -> Registry[Harness]:
        """Harnesses by name."""
        ...

    @property
    def runtime(self) -> Runtime:
        """Where harness compute runs (snapshot, restore, clone, create, stop)."""
        ...

    @property
    def on_record(self) -> Callable[[Record], None] | None:
        """Told of each record committed, once it is durable (isolated observer)."""
        ...

    def session_writer(self, uid: str, wait_seconds: float) -> AbstractContextManager[HeldWriter]:
        """The session's single writer, held or opened (waiting for a busy lock)."""
        ...

    def place(self, descriptor: HarnessDescriptor) -> None:
        """Refuse (PlacementError) a harness this runtime cannot host."""
        ...

    def describe_harness(self, name: str, project: str = "") -> tuple[Harness, HarnessDescriptor]:
        """A new instance of harness ``name`` as ``project`` resolves it, and its descriptor
        (HarnessError if not)."""
        ...

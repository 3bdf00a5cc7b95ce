"""The stores the controller's conformance suite runs on: the file store and the memory store.

A :class:`Backend` reopens its store the way a new process would. For the file store that
is a new ``FileStore`` over the same home (the journal is read back from disk); for the
memory store it is the same instance, because its sessions live in this process's memory
and nothing else can reopen them. Controllers are always new, so a "reopened controller"
case still gets a fresh writer, fence and caches on either store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentsessions.controller.controller import Controller
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import Store
from agentsessions.journal.tools.verify import check_chain, verify_session
from agentsessions.sessions.wiring import build_controller
from agentsessions.v1.results import VerifyReport


@dataclass
class Backend:
    """A store kind under test, its home (for the runtime) and how to reopen it."""

    name: str
    home: Path
    open: Callable[[], Store]

    def controller(self, **kw: Any) -> Controller:
        """A new controller on a reopened store."""
        return build_controller(self.open(), self.home, **kw)

    def verified(self, uid: str) -> bool:
        """The session's chain verifies from genesis (and, on disk, its files do too)."""
        store = self.open()
        ok = check_chain(store.read(uid), VerifyReport(source=uid)).ok
        if isinstance(store, FileStore):
            ok = ok and verify_session(store, uid).ok
        return ok


def file_backend(tmp: Path) -> Backend:
    """The file store: each ``open`` reads the home from disk again."""
    home = tmp / "home"
    return Backend("file", home, lambda: FileStore(home))


def memory_backend(tmp: Path) -> Backend:
    """The memory store: one instance for the test (its memory is the only copy)."""
    store = MemoryStore()
    return Backend("memory", tmp / "home", lambda: store)


BACKENDS: dict[str, Callable[[Path], Backend]] = {"file": file_backend, "memory": memory_backend}

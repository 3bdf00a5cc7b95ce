"""Each session's workloads by digest: the tools an execution ran with, for good.

:class:`RecordedWorkloads` is the engine's :class:`~agentsessions.controller.spi.Workloads`.
A new execution records the digest of the session's current workload (its ``WORKLOAD``
file) in its EXECUTION_START (:mod:`agentsessions.v1.workloadref`); the text is kept by
that digest beside the journal first (the store's ``keep_workload``), so that after a later
``--tools`` replaced the workload, a replay, resume or approval of the older execution is
offered, and runs, exactly the tools it had. Digest ``""`` (a turn recorded before digests)
is the current workload, as it always was.

Where a digest's text is looked for: the session's own kept workloads, then those of the
session it was forked from (a fork child replays its parent's turns), up the fork chain.
Nothing else: a digest found nowhere (a journal imported or copied from elsewhere:
workloads are not exported) gets the session's current workload, the rule before digests,
so such a session behaves as it always did (a replay offered other tools diverges on the
model input hash). A turn of a session without a workload imports none of the tools'
modules (parsing, listing, executors, tool stores). A workload is parsed once per
digest; its executors are made on first bind and kept for the life of this object (one mcp
server per spec), and :meth:`RecordedWorkloads.close` closes them.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from agentsessions.controller.spi import BoundTool, ToolExecutor, ToolSpec
from agentsessions.errors import NotFoundError, UnknownToolError
from agentsessions.journal.stores.capabilities import WORKLOADS
from agentsessions.journal.stores.store import Store
from agentsessions.v1 import workloadref
from agentsessions.valueclass import replace

if TYPE_CHECKING:  # the tools' modules (their executors, TOML) load when a workload is read
    from .workload import Workload

_FORK_DEPTH = 64  # a fork chain longer than this is not followed (a damaged parent link)


class RecordedWorkloads:
    """The workloads of ``store``'s sessions, current and by digest (module docstring)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._kept_by = WORKLOADS.of(store)  # None: a store that keeps no workloads
        self._lock = threading.Lock()
        self._parsed: dict[str, Workload] = {}  # by digest
        self._specs: dict[str, tuple[ToolSpec, ...]] = {}  # by digest
        self._kept: dict[tuple[str, str], str] = {}  # (uid, text) -> digest, kept already
        self._executors: dict[str, ToolExecutor] = {}  # by spec, shared by every workload
        self._executors_lock = threading.Lock()

    def current(self, uid: str) -> str:
        """The digest of ``uid``'s workload now (kept by it first); "" without one, or on a
        store that cannot keep workloads by digest (its runs then record none).

        What is kept is the workload with what its tool servers list for the tools it
        leaves undescribed (:func:`~.listing.with_listing`: such a server is started here,
        as the turn begins), so the turn's offer is on the record and replay needs no
        server."""
        text = self._text_now(uid)
        if text is None or self._kept_by is None:
            return ""
        workload, _key = self._workload(uid, "")
        if workload is not None:
            from .listing import with_listing  # a turn with tools only (module docstring)

            text = with_listing(workload)
        found = self._kept.get((uid, text))
        if found is None:
            found = self._kept_by.keep_workload(uid, text)
            with self._lock:
                self._kept[(uid, text)] = found
        return found

    def offers(self, uid: str, digest: str) -> tuple[ToolSpec, ...]:
        """What workload ``digest`` (""): the current one) offers a harness, by name: every
        tool, ``reported`` ones included (the harness decides what it can run)."""
        workload, key = self._workload(uid, digest)
        if workload is None:
            return ()
        specs = self._specs.get(key)
        if specs is None:
            specs = tuple(
                ToolSpec(name, t.description, t.mediation, dict(t.parameters))
                for name, t in sorted(workload.tools.items())
            )
            with self._lock:
                self._specs[key] = specs
        return specs

    def bind(self, uid: str, digest: str, name: str) -> BoundTool:
        """The tool ``name`` of workload ``digest`` with its executor (:meth:`Workload.bind`)."""
        workload, _key = self._workload(uid, digest)
        if workload is None:
            raise UnknownToolError(
                f"session {uid} has no tools; tool {name!r} cannot run; nothing was recorded",
                hint=f"agentsessions exec {uid} --tools FILE",
            )
        bound = workload.bind(uid, name)
        if name not in workload.tool_components:
            return bound  # in neither list: no session access at all
        # the host binds the store to (this session, this tool); the tool never names either
        from .toolstore import ToolStore

        return replace(bound, store=ToolStore(self._store.component(uid, name)))

    def check_harness(self, uid: str, harness: str) -> None:
        """:meth:`~agentsessions.controller.spi.Workloads.check_harness`: the current
        workload's :meth:`Workload.check_harness` (any harness, without a workload)."""
        workload, _key = self._workload(uid, "")
        if workload is not None:
            workload.check_harness(uid, harness)

    def close(self) -> None:
        """Close every workload's executors (an mcp server process); a later bind makes
        them again."""
        with self._lock:
            workloads = list(self._parsed.values())
            self._parsed.clear()
        for workload in workloads:
            workload.close()

    # -- internals ------------------------------------------------------------------------
    def _text_now(self, uid: str) -> str | None:
        return self._kept_by.workload(uid) if self._kept_by is not None else None

    def _workload(self, uid: str, digest: str) -> tuple[Workload | None, str]:
        """The parsed workload ``digest`` names (the current one for "") and its key."""
        text: str | None = None
        if not digest:
            text = self._text_now(uid)
            if text is None:
                return None, ""
            digest = workloadref.digest_of(text)
        found = self._parsed.get(digest)
        if found is not None:
            return found, digest
        text = text if text is not None else self._kept_text(uid, digest)
        if text is None:
            # kept nowhere: a journal copied or imported from elsewhere (workloads are not
            # exported); it gets the current workload, the rule before digests, and a
            # replay whose offered tools then differ diverges on the model input hash
            return self._workload(uid, "") if self._text_now(uid) is not None else (None, "")
        from .workload import parse_workload  # its executors' modules: a turn with tools only

        parsed = parse_workload(text, f"(workload sha256:{digest[:12]} of {uid})")
        # one executor per spec for all of them: the server started to list a turn's tools
        # is the one its calls go to (the listed text has a digest of its own)
        parsed = replace(parsed, _executors=self._executors, _lock=self._executors_lock)
        with self._lock:
            found = self._parsed.setdefault(digest, parsed)
        return found, digest

    def _kept_text(self, uid: str, digest: str) -> str | None:
        """The text kept under ``digest`` for ``uid`` or a session it was forked from."""
        if self._kept_by is None:
            return None
        current: str = uid
        for _ in range(_FORK_DEPTH):
            try:
                text = self._kept_by.workload_at(current, digest)
                if isinstance(text, str) and workloadref.digest_of(text) == digest:
                    return text
                parent = self._store.get(current).meta.parent_uid
            except NotFoundError:
                return None
            if not parent:
                return None
            current = parent
        return None

"""The OpenAI Agents SDK's ``Session`` on agentsessions (extra ``[openai-agents]``).

:class:`AgentSessionsSession` is a drop-in for the SDK's ``SQLiteSession``: pass it as
``Runner.run(..., session=...)``. It is a thin layer over the :class:`Sessions` engine
(``agentsessions.open()``), so the file store, JetStream and encryption at rest all work, and
the session it writes is an ordinary one: ``agentsessions log/verify/export/fork UID``.

How the SDK's model maps onto the journal (and why):

- ``session_id`` -> one agentsessions session in project ``openai-agents`` (configurable)
  whose *name* and key are the session id (:mod:`.common`: found by one lookup, created on
  the first write, atomically: two processes writing one new id at once make one session
  and both writes land in it; before the first write, reads see an empty history).
- ``add_items(items)`` -> one turn of the ``openai-agents`` recording harness, whose inputs
  are one INPUT event per item: a ``user`` message with one DataPart
  ``{"openai_agents": {"item": ITEM}}``. A turn is the engine's unit of atomic, serialised,
  durable writing, so a batch is all or nothing, two writers never interleave (the engine's
  fencing makes the second wait, then fail with LockHeldError), and the items are durable
  when ``add_items`` returns. Every item is serialised before anything is written, so an
  unserialisable item writes nothing of its batch.
- ``pop_item()`` / ``clear_session()`` -> an INPUT whose DataPart is
  ``{"openai_agents": {"pop": SEQ, "id": NONCE}}`` (SEQ: the journal seq of the item it
  pops, which it removes only if that item is still the newest, so two processes popping at
  once never both get one item: the later one reads again and retries) /
  ``{"openai_agents": {"clear": 1}}``. Nothing is deleted, the hash chain still verifies
  offline, and a read folds the events in order.
- ``fork(at=None)`` -> the engine's O(1) fork (the child shares the parent's prefix).

Items are stored as JSON: they round-trip equal as the SDK's own stores require (items are
JSON objects; numbers are canonical JSON's float64, so ``1.0`` reads back as the equal ``1``,
and an integer beyond 2**53 is refused whole, InvalidArgumentError, nothing written).
The SDK stays optional: nothing outside this module imports it.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentsessions.integrations import missing_framework

try:
    from agents.memory.session import SessionABC
    from agents.memory.session_settings import (
        SessionSettings,
        coerce_session_settings,
        resolve_session_limit,
    )
except ImportError as exc:  # the extra is not installed
    raise missing_framework(__name__, exc) from exc

from agentsessions.errors import InvalidArgumentError, NotFoundError
from agentsessions.sessions.wiring import HARNESSES

from . import recording
from .common import WAIT, claim_named, engine_of, find_named, message, run_named, settled

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

    from agentsessions.sessions.api import Sessions

__all__ = ["HARNESS", "PROJECT", "AgentSessionsSession"]

HARNESS = recording.NAME
"""The recording harness of the adapter's turns: it records the inputs and calls nothing."""
PROJECT = "openai-agents"
"""The default project of the adapter's sessions."""
_KEY = "openai_agents"
_LOCKS: dict[tuple[int, str], threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


HARNESSES.register(HARNESS, recording.create)  # also before an install adds the entry point


def _encode(item: Any) -> dict[str, Any]:
    """The item's INPUT message; TypeError (nothing written) if it is not JSON."""
    try:
        text = json.dumps(item, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"session item is not JSON-serialisable: {exc}") from None
    return message(_KEY, {"item": json.loads(text)})


class AgentSessionsSession(SessionABC):
    """The SDK's ``Session`` protocol kept in an agentsessions session.

    ``where``: a home directory, a store URL (``nats://...``), or an open :class:`Sessions`
    engine (shared, not closed by :meth:`close`); None: the default home. ``key_file``
    encrypts new sessions at rest (a home or URL only). Safe from several threads, each
    with its own event loop: the engine is thread-safe and calls run in worker threads.
    """

    def __init__(
        self,
        session_id: str,
        where: str | os.PathLike[str] | Sessions | None = None,
        *,
        project: str = PROJECT,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        key_file: str | None = None,
        _uid: str = "",
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise InvalidArgumentError("session_id must be a non-empty string")
        self.session_id = session_id
        self.session_settings = _settings(session_settings)
        self.project = project
        self._engine, self._own = engine_of(where, key_file)
        self._uid = _uid
        self._closed = False
        self._fold_lock = threading.Lock()
        self._folded: list[tuple[int, Any]] = []  # (seq, item) as of journal seq _folded_seq
        self._folded_seq = 0
        self._popped: set[str] = set()  # ids of the pop records that took effect

    # --- the SDK's protocol -------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history, oldest first; ``limit``: only the latest n (0: none)."""
        n = resolve_session_limit(limit, self.session_settings)
        items = await asyncio.to_thread(self._items)
        if n is None or n < 0:
            return items
        return items[-n:] if n else []

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` in one atomic, durable turn (nothing of it if one is not JSON)."""
        self._check_open()
        messages = [_encode(item) for item in items]  # all checked before any write
        if messages:
            await settled(asyncio.to_thread(self._write, messages))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item (recorded, not deleted), or None."""
        return await settled(asyncio.to_thread(self._pop))

    async def clear_session(self) -> None:
        """Empty this session id's history (recorded as an event; other ids untouched)."""
        await settled(asyncio.to_thread(self._clear))

    def close(self) -> None:
        """Close the engine this adapter opened (a shared engine stays open); idempotent."""
        if not self._closed:
            self._closed = True
            if self._own:
                self._engine.close()

    # --- beyond the SDK -----------------------------------------------------------------

    @property
    def uid(self) -> str:
        """The agentsessions uid of this session (``agentsessions log/verify UID``); "" if
        nothing has been written yet."""
        self._check_open()
        return self._uid or self._find()

    def fork(self, at: int | None = None, *, session_id: str | None = None) -> AgentSessionsSession:
        """A new session sharing this one's history up to journal seq ``at`` (None: now),
        in O(1); its id is ``session_id`` (default: ``<id>-fork-<8 random hex>``;
        InvalidArgumentError if a live session has that id). The child shares this
        adapter's engine, so close this one last."""
        uid = self.uid
        if not uid:
            raise NotFoundError(f"session {self.session_id!r} has no history to fork")
        name = session_id or f"{self.session_id}-fork-{os.urandom(4).hex()}"
        [child] = self._engine.fork(uid, at=at or 0, names=[name])
        claim_named(self._engine, self.project, name, child.uid)  # found by its id from now on
        return AgentSessionsSession(
            name,
            self._engine,
            project=self.project,
            session_settings=self.session_settings,
            _uid=child.uid,
        )

    # --- the work, in a worker thread ---------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} is closed")

    def _find(self) -> str:
        """The uid of the live session whose key is ``session_id`` in the project, or ""."""
        found = find_named(self._engine, self.project, self.session_id)
        if found:
            self._uid = found
        return self._uid

    def _lock(self) -> threading.Lock:
        key = (id(self._engine), self.project + "\0" + self.session_id)
        with _LOCKS_GUARD:
            return _LOCKS.setdefault(key, threading.Lock())

    def _items(self) -> list[Any]:
        """The folded history: the records after the last one folded, onto the cached fold
        (the journal only grows, so a read costs what was written since the last one)."""
        self._check_open()
        uid = self._uid or self._find()
        if not uid:
            return []
        with self._fold_lock:
            for record in self._engine.read(uid, from_seq=self._folded_seq + 1):
                self._fold(record.seq, record.event)
                self._folded_seq = record.seq
            return [item for _, item in self._folded]

    def _newest_seq(self) -> int:
        with self._fold_lock:
            return self._folded[-1][0] if self._folded else 0

    def _fold(self, seq: int, event: Mapping[str, Any]) -> None:
        if event.get("kind") != "EVENT_INPUT":
            return
        for part in (event.get("message") or {}).get("parts", ()):
            body = (part.get("data") or {}).get("data", {}).get(_KEY)
            if not isinstance(body, dict):
                continue
            if "item" in body:
                self._folded.append((seq, body["item"]))
            elif "pop" in body:  # it pops the item it read, only if that is still the newest
                if self._folded and self._folded[-1][0] == body["pop"]:
                    self._folded.pop()
                    self._popped.add(str(body.get("id", "")))
            elif "clear" in body:
                self._folded.clear()

    def _write(self, messages: list[dict[str, Any]]) -> None:
        self._check_open()
        with self._lock():
            uid = self._uid or self._find()
            frame = run_named(self._engine, self.project, self.session_id, uid, messages, HARNESS)
            self._uid = frame.session.uid

    def _pop(self) -> Any:
        """Pop the newest item, atomically against other processes: the record names the
        item's seq and takes effect only if that item is still the newest when it commits
        (else another writer came first: read again and retry)."""
        with self._lock():
            while True:
                items = self._items()
                if not items:
                    return None
                pop = {"pop": self._newest_seq(), "id": os.urandom(8).hex()}
                self._engine.run(self._uid, [message(_KEY, pop)], harness=HARNESS, wait=WAIT)
                self._items()  # fold up to our record: did it take effect?
                with self._fold_lock:
                    if pop["id"] in self._popped:
                        return items[-1]

    def _clear(self) -> None:
        with self._lock():
            if self._items():
                self._engine.run(
                    self._uid, [message(_KEY, {"clear": 1})], harness=HARNESS, wait=WAIT
                )


def _settings(value: SessionSettings | dict[str, Any] | None) -> SessionSettings:
    """The SDK's settings; a dict is coerced as the SDK's own stores do (an unknown key is
    a TypeError)."""
    return SessionSettings() if value is None else coerce_session_settings(value)

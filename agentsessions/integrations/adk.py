"""Google ADK's ``BaseSessionService`` on agentsessions (extra ``[adk]``).

:class:`AgentSessionsService` is a drop-in for ADK's ``DatabaseSessionService``: pass it as
``Runner(..., session_service=...)``. It is a thin layer over the :class:`Sessions` engine
(``agentsessions.open()``), so the file store, JetStream and encryption at rest all work, and
what it writes are ordinary sessions: ``agentsessions list/log/verify/export/fork UID``.

How ADK's model maps onto the journal (and why):

- One agentsessions session per ADK session, in one project (``adk`` by default), *named*
  ``session/APP/USER/ID`` (each part percent-encoded, so a ``/`` in an id stays apart),
  which is also its key (``Sessions.ensure``/``find``): one lookup finds it, and of two
  processes creating one id at once exactly one succeeds (the other: AlreadyExistsError);
  ``agentsessions list`` reads like ADK's own hierarchy.
- Its writes are turns of the ``adk`` harness (:mod:`.adk_harness`), one INPUT per write:
  ``create_session`` makes the session, then runs the turn that records it (its
  session-scoped state; a service killed between the two leaves the session with empty
  state, and the id taken),
  ``append_event`` one turn whose INPUT is the event's JSON. A turn is the engine's unit of
  atomic, serialised, durable writing, and the harness commits the session-scoped state in
  the same turn as its working state: the event and the state it sets are one commit.
- App state (``app:`` keys) lives in a session named ``app/APP``, user state (``user:``) in
  ``user/APP/USER``; each update is a turn there whose INPUT is the delta and its source
  (the ADK session's uid and write count). They are written after the event's turn: the
  event is the commit point, and its JSON keeps the whole delta (a create turn keeps the
  initial app and user keys), so if the writer dies before the scopes have it, the next
  service that reads or writes that session finds the source missing there and writes it
  (ADK's database service writes all in one SQL transaction; agentsessions commits one
  session at a time, so a repaired delta lands late, and overwrites any newer value another
  session wrote for the same key meanwhile).
- ``temp:`` keys are applied to the caller's session object and never written, as ADK does.
- ``delete_session`` is the engine's soft delete: hidden from ``list`` and ``get_session``,
  never written again, still readable and verifiable (``agentsessions log UID``).
- The stale-session check: a session object carries a revision marker (the uid and the
  number of writes it has seen). ``append_event`` refuses a stale object with ADK's own
  ``StaleSessionError``, first against what this service last read (no store read), then
  inside the turn itself (the harness compares the count it starts from with the one the
  write was made against): two processes appending to one session are serialised by the
  engine (the second waits for the first's turn), and a write made against an older count
  fails its turn (ERROR recorded, never applied), so nothing interleaves and nothing is
  lost. Re-get the session and append again, as with ADK's database service.
- Several processes on one session: on the file store an engine keeps a session's writer,
  and its lock, between turns (that is what makes a turn cheap), so another process's
  append waits for it to be released (the holder closes its service, or its writer idles
  out) for up to 60 s, then raises LockHeldError. One process per ADK session at a time is
  the fast path. On JetStream another process takes an idle writer over (fencing this
  one); a write whose writer was superseded as its turn began is taken again (a few times),
  which the count check above makes safe.

Reads fold the journal incrementally: the service keeps, per session, the records folded so
far and reads only the ones after them, and an append folds its own write without reading
(its turn ran at the count it expected, so it is the next write), so an append costs the
same on the 10,000th event as on the first (a cold service folds a session once). Only
executions that END ``COMPLETED`` take effect. ``get_session`` decodes the events it returns
(``num_recent_events`` and ``after_timestamp`` select them first).

Events and state are stored as JSON (``Event.model_dump(mode="json")``, bytes in base64 as
ADK's own model says); a state value that is not JSON (an object, a callable) is refused
with :class:`~agentsessions.errors.InvalidArgumentError` and nothing is written, where ADK's
database service would store its ``repr``; numbers are canonical JSON's float64 (``1.0``
reads back as ``1``; an integer beyond 2**53 is refused, nothing written, and so is an event
over the store's commit limit, CommitTooLargeError). An unknown session
is ADK's ``SessionNotFoundError`` (``append_event``) or None (``get_session``), a duplicate
id ADK's ``AlreadyExistsError``; a closed service raises RuntimeError; a store that is down
raises the engine's own errors (UnavailableError). ADK stays optional: nothing outside this
module and its :mod:`.adk_fold` (imported by it only) imports it.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from agentsessions.integrations import missing_framework

try:
    from google.adk.errors import StaleSessionError
    from google.adk.errors.already_exists_error import AlreadyExistsError
    from google.adk.errors.session_not_found_error import SessionNotFoundError
    from google.adk.events.event import Event
    from google.adk.sessions.base_session_service import (
        BaseSessionService,
        GetSessionConfig,
        ListSessionsResponse,
    )
    from google.adk.sessions.session import Session
    from google.adk.sessions.state import State
    from pydantic_core import PydanticSerializationError, to_jsonable_python
except ImportError as exc:  # the extra is not installed
    raise missing_framework(__name__, exc) from exc

from agentsessions.errors import (
    FencedError,
    HarnessError,
    InvalidArgumentError,
    LockHeldError,
    SessionDeletedError,
)
from agentsessions.sessions.wiring import HARNESSES

from . import adk_harness
from .adk_fold import MARK, Fold, scope_keys
from .common import WAIT, engine_of, ensure_named, find_named, message, named, settled

if TYPE_CHECKING:
    from agentsessions.sessions.api import Sessions
    from agentsessions.sessions.values import SessionFrame

__all__ = ["HARNESS", "PROJECT", "AgentSessionsService"]

HARNESS = adk_harness.NAME
"""The harness of the adapter's turns: records the writes, commits the folded state."""
PROJECT = "adk"
"""The default project of the adapter's sessions."""
_FENCED_TRIES = 5  # turns a write takes when other processes keep superseding its writer

HARNESSES.register(HARNESS, adk_harness.create)  # also before an install adds the entry point


def _name(*parts: str) -> str:
    return "/".join(quote(p, safe="") for p in parts)


def _json(value: Any, what: str) -> Any:
    """``value`` as plain JSON (a fresh copy); InvalidArgumentError, nothing written, if it
    is not (ADK's pydantic JSON mode first: datetimes, models, sets, bytes)."""
    try:
        return json.loads(json.dumps(to_jsonable_python(value), allow_nan=False))
    except (PydanticSerializationError, TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{what} is not JSON-serialisable: {exc}") from None


class AgentSessionsService(BaseSessionService):
    """ADK's session service kept in agentsessions sessions.

    ``where``: a home directory, a store URL (``nats://...``), or an open :class:`Sessions`
    engine (shared, not closed by :meth:`close`); None: the default home. ``key_file``
    encrypts new sessions at rest (a home or URL only). The engine's calls run in worker
    threads; one service may be used from several event loops and threads: different
    sessions are read and written in parallel, one session's writes one at a time.
    """

    def __init__(
        self,
        where: str | os.PathLike[str] | Sessions | None = None,
        *,
        project: str = PROJECT,
        key_file: str | None = None,
    ) -> None:
        self.project = project
        self._engine, self._own = engine_of(where, key_file)
        self._closed = False
        self._lock = threading.RLock()  # the two maps below (each fold has its own lock)
        self._uids: dict[str, str] = {}  # name -> uid of the live session so named
        self._folds: dict[str, Fold] = {}  # uid -> its fold

    # --- ADK's BaseSessionService ---------------------------------------------------------

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """A new session (its session-scoped ``state``; app and user keys go to their
        scopes); AlreadyExistsError if ``session_id`` names a live one."""
        return await settled(
            asyncio.to_thread(self._create, app_name, user_id, state or {}, session_id)
        )

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """The session with its events (``config`` selects the recent ones) and its merged
        app, user and session state; None if there is no such live session."""
        return await asyncio.to_thread(self._get, app_name, user_id, session_id, config)

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """The app's (the user's) live sessions without events, oldest update first."""
        return await asyncio.to_thread(self._list, app_name, user_id)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Soft-delete the session (the journal keeps it); nothing if there is none."""
        await settled(asyncio.to_thread(self._delete, app_name, user_id, session_id))

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The user's state, keys without the ``user:`` prefix."""
        return await asyncio.to_thread(self._scope_state, _name("user", app_name, user_id))

    async def append_event(self, session: Session, event: Event) -> Event:
        """Write ``event`` (and its state delta) durably, then apply it to ``session``.

        A partial event is returned unwritten, as ADK's services do; a stale ``session`` is
        refused (StaleSessionError), an unknown one is SessionNotFoundError, a state value
        that is not JSON InvalidArgumentError: nothing written then.
        """
        if event.partial:
            return event
        self._check_open()
        delta = event.actions.state_delta if event.actions else {}
        kept = {k: v for k, v in delta.items() if not k.startswith(State.TEMP_PREFIX)}
        _json(kept, "a state value")  # all checked before any write
        record = _json(event.model_dump(mode="json", exclude_none=True), "the event")
        record.setdefault("actions", {})["state_delta"] = _json(kept, "a state value")
        await settled(asyncio.to_thread(self._append, session, record))
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        return self._commit_event_to_session(session, event)

    async def close(self) -> None:
        """Close the engine this service opened (a shared engine stays open); idempotent."""
        if not self._closed:
            self._closed = True
            if self._own:
                await asyncio.to_thread(self._engine.close)

    async def __aenter__(self) -> AgentSessionsService:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- beyond ADK ---------------------------------------------------------------------

    def uid(self, app_name: str, user_id: str, session_id: str) -> str:
        """The agentsessions uid of an ADK session (``agentsessions log/verify UID``); ""
        if there is no such live session."""
        self._check_open()
        return self._find(_name("session", app_name, user_id, session_id))

    # --- the work, in a worker thread ---------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} is closed")

    def _refresh(self) -> None:
        """Map every live name to its session (``list_sessions``: a listing of the project);
        a name found twice (a session of another writer so named, not by key) is the
        oldest's."""
        oldest: dict[str, tuple[int, str]] = {}
        for name, uid, created in named(self._engine, self.project):
            oldest[name] = min(oldest.get(name, (created, uid)), (created, uid))
        self._uids = {name: uid for name, (_, uid) in oldest.items()}

    def _find(self, name: str) -> str:
        """The uid of the live session whose key is ``name``, or "" (one lookup, cached)."""
        with self._lock:
            if name in self._uids:
                return self._uids[name]
        uid = find_named(self._engine, self.project, name)
        if uid:
            with self._lock:
                self._uids.setdefault(name, uid)
        return uid

    def _fold(self, uid: str) -> Fold:
        """The scope's fold, brought up to the journal's head (only the new records)."""
        with self._lock:
            fold = self._folds.setdefault(uid, Fold(uid))
        with fold.lock:
            fold.read(self._engine)
        return fold

    def _scope_state(self, name: str) -> dict[str, Any]:
        self._check_open()
        uid = self._find(name)
        if not uid:
            return {}
        fold = self._fold(uid)
        with fold.lock:
            return dict(fold.state["state"])

    def _merged(self, app_name: str, user_id: str, fold: Fold) -> dict[str, Any]:
        """The session's state with its app's and user's (prefixed), as ADK merges them
        (the caller holds ``fold.lock``; a scope's lock is taken after a session's)."""
        state = dict(fold.state["state"])
        for prefix, name in (
            (State.APP_PREFIX, _name("app", app_name)),
            (State.USER_PREFIX, _name("user", app_name, user_id)),
        ):
            uid = self._find(name)  # made before the session: in the cache with it
            if uid:
                scope = self._fold(uid)
                with scope.lock:
                    state.update({prefix + k: v for k, v in scope.state["state"].items()})
        return state

    def _session(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        fold: Fold,
        first: int | None = None,
    ) -> Session:
        """The ADK session as folded, with its events from index ``first`` (None: none).

        Each event is validated into ADK's model once, when first read, and the models are
        shared by the sessions returned later (a new list each time): building every event
        anew on each ``get_session`` made a turn cost grow with the session (ADK's Runner
        reads the session at every turn). ADK's flows copy an event before they change one
        (``model_copy``); a caller that edits a returned event in place edits the cache."""
        while first is not None and len(fold.models) < len(fold.events):
            fold.models.append(Event.model_validate(fold.events[len(fold.models)]))
        session = Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=json.loads(json.dumps(self._merged(app_name, user_id, fold))),
            events=[] if first is None else fold.models[first:],
            last_update_time=fold.updated,
        )
        session._storage_update_marker = fold.marker
        return session

    def _create(
        self, app_name: str, user_id: str, state: dict[str, Any], session_id: str | None
    ) -> Session:
        self._check_open()
        session_id = session_id.strip() if session_id else str(uuid.uuid4())
        state = _json(state, "a state value")
        scoped = {k: v for k, v in state.items() if not k.startswith(adk_harness.PREFIXES)}
        name = _name("session", app_name, user_id, session_id)
        if self._find(name):
            raise AlreadyExistsError(f"Session with id {session_id} already exists.")
        self._scope(_name("app", app_name))
        self._scope(_name("user", app_name, user_id))
        shared = {k: v for k, v in state.items() if k not in scoped}
        body = {"create": scoped, "time": time.time(), "shared": scope_keys(shared)}
        mine, created = ensure_named(self._engine, self.project, name, HARNESS)
        if not created:  # another process (or thread) created the id meanwhile
            raise AlreadyExistsError(f"Session with id {session_id} already exists.")
        self._write(mine, body)
        with self._lock:
            self._uids[name] = mine
        fold = self._fold(mine)
        with fold.lock:
            self._repair(app_name, user_id, fold, check=False)
            return self._session(app_name, user_id, session_id, fold)  # new: no events yet

    def _live(self, app_name: str, user_id: str, session_id: str) -> Fold | None:
        """The fold of the live session so named, or None (asking the engine whether another
        process deleted it; a write need not ask: the engine refuses it)."""
        name = _name("session", app_name, user_id, session_id.strip())
        uid = self._find(name)
        if uid and self._engine.get(uid).deleted:
            with self._lock:
                self._uids.pop(name, None)
            uid = self._find(name)
        return self._fold(uid) if uid else None

    def _get(
        self, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None
    ) -> Session | None:
        self._check_open()
        fold = self._live(app_name, user_id, session_id)
        if fold is None:
            return None
        with fold.lock:
            self._repair(app_name, user_id, fold)
            events = fold.events
            first = 0
            if config is not None and config.num_recent_events is not None:
                count = config.num_recent_events
                first = max(len(events) - count, 0) if count else len(events)
            if config is not None and config.after_timestamp is not None:
                last, first = first, len(events)
                while first > last and events[first - 1].get("timestamp", 0) >= (
                    config.after_timestamp
                ):
                    first -= 1
            return self._session(app_name, user_id, session_id.strip(), fold, first)

    def _list(self, app_name: str, user_id: str | None) -> ListSessionsResponse:
        self._check_open()
        prefix = _name("session", app_name) + "/"
        if user_id is not None:
            prefix = _name("session", app_name, user_id) + "/"
        found: list[Session] = []
        with self._lock:
            self._refresh()
            names = sorted(self._uids.items())
        for name, uid in names:
            parts = name.split("/")
            if not name.startswith(prefix) or len(parts) != 4:  # another's name: not ADK's
                continue
            _, _, user, sid = (unquote(p) for p in parts)
            fold = self._fold(uid)
            with fold.lock:
                found.append(self._session(app_name, user, sid, fold))
        found.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=found)

    def _delete(self, app_name: str, user_id: str, session_id: str) -> None:
        self._check_open()
        name = _name("session", app_name, user_id, session_id.strip())
        uid = self._find(name)
        if uid:
            _waiting(lambda: self._engine.delete(uid))
            with self._lock:
                self._uids.pop(name, None)

    def _append(self, session: Session, record: dict[str, Any]) -> None:
        self._check_open()
        fold = self._of(session)
        with fold.lock:
            self._check_fresh(session, fold)
            self._repair(session.app_name, session.user_id, fold)
            expect = fold.state["n"]
            body = {"event": record, "expect": expect}
            try:
                frame = self._write(fold.uid, body)
            except SessionDeletedError:
                raise SessionNotFoundError(f"Session {session.id} not found.") from None
            except HarnessError:
                fold.read(self._engine)
                if fold.state["n"] != expect:  # another writer came first
                    raise StaleSessionError(_STALE) from None
                raise
            # The turn ran at count `expect`: no other event took effect since the fold, so
            # ours is the next (records between were failed turns): fold it without a read.
            fold.take(body)
            fold.seq, fold.pending = frame.session.last_seq, {}
            self._repair(session.app_name, session.user_id, fold, check=False)
            session.last_update_time = fold.updated
            session._storage_update_marker = fold.marker

    def _write(self, uid: str, body: dict[str, Any]) -> SessionFrame:
        """One turn of ``body`` on session ``uid``, taken again if another process's engine
        superseded this one's writer (FencedError: JetStream hands an idle writer to the
        host that asks). Safe to repeat: an event's turn applies only at the count it was
        made against, and a scope's delta sets the same values twice."""
        tries = 1
        while True:
            try:
                return self._engine.run(
                    uid, [message(adk_harness.KEY, body)], harness=HARNESS, wait=WAIT
                )
            except FencedError:
                if tries == _FENCED_TRIES:
                    raise
                tries += 1

    def _of(self, session: Session) -> Fold:
        """The fold of the session ``session`` names (SessionNotFoundError if none)."""
        name = _name("session", session.app_name, session.user_id, session.id.strip())
        uid = self._find(name)
        if not uid:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        with self._lock:
            return self._folds.setdefault(uid, Fold(uid))

    def _check_fresh(self, session: Session, fold: Fold) -> None:
        """StaleSessionError if ``session`` is behind ``fold`` (whose lock the caller holds).

        An object this service read carries our marker: it is compared with the cached fold,
        with no store read (an append elsewhere since is caught inside the turn). Any other
        object is compared by its update time, as ADK's services do, with a fresh fold.
        """
        marker = session._storage_update_marker
        if fold.seq == 0 or not (marker and marker.startswith(MARK)) or marker != fold.marker:
            fold.read(self._engine)  # never read, behind another instance's object, or not ours
        if marker is not None and marker.startswith(MARK):
            if marker != fold.marker:
                raise StaleSessionError(_STALE)
        elif fold.updated > session.last_update_time:
            raise StaleSessionError(_STALE)

    def _repair(self, app_name: str, user_id: str, fold: Fold, *, check: bool = True) -> None:
        """Write the ADK session's last app and user delta to its scopes if they lack it.

        The delta is in the session's own journal first (its event's turn, or its create
        turn); each scope's update names its source (uid, write count), so a delta whose
        writer died before it reached the scopes is found and written by the next service
        that reads or writes the session (late: a newer value another session wrote for the
        same key meanwhile is overwritten). ``check=False``: the delta was just written,
        so no scope can have it yet (no read). A delta this service shared is never looked
        up again.
        """
        if fold.shared is None:
            return
        n, state = fold.shared
        for prefix, name in (
            (State.APP_PREFIX, _name("app", app_name)),
            (State.USER_PREFIX, _name("user", app_name, user_id)),
        ):
            delta = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
            if not delta:
                continue
            scope = self._scope(name)
            if check and self._fold(scope).applied.get(fold.uid, -1) >= n:
                continue  # there already
            body = {"delta": delta, "from": fold.uid, "n": n}
            self._write(scope, body)
        fold.shared = None

    def _scope(self, name: str) -> str:
        """The uid of an app or user scope's session, created (empty) if there is none.

        Made before the first ADK session of its app and user, so whoever finds an ADK
        session in a listing finds its scopes there too. Two processes creating one at once
        get one (``Sessions.ensure``); the one that made it records its creation.
        """
        uid = self._find(name)
        if uid:
            return uid
        uid, created = ensure_named(self._engine, self.project, name, HARNESS)
        if created:
            self._write(uid, {"create": {}})
        with self._lock:
            self._uids[name] = uid
        return uid


_STALE = (
    "The session has been modified since it was read (another writer appended to it); "
    "get the session again and retry. It is a stale session."
)


def _waiting(work: Callable[[], object]) -> None:
    """``work``, retried while another engine holds the session's writer (a long-lived
    engine keeps it up to its idle limit after a turn), for up to ``WAIT`` seconds."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            work()
            return
        except LockHeldError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)

"""The engine's turns: ``Sessions.exec``, ``run`` and ``resume`` (:class:`TurnRunner`).

A turn is a :class:`~agentsessions.v1.turn.TurnRequest`, checked in the caller's thread
before anything is written (:mod:`.checks`, then the session's state under its lock), its
session made when it has none (by the controller, with the defaults resolved here), then run
on a worker thread (``exec``) or the caller's (``run``) with the session's lock held to its
end. A suspended session's compute is woken first; the request's ``expected_last_seq`` is
checked against the head before that, and moves with the wake's own records.

A request naming its session by origin (no uid) runs on the session that origin names, made
first if there is none, atomically across processes (:func:`.claims.settle`): the new
session's metadata is created as ``ensure`` creates it, after the checks a new session's
turn gets, and its harness starts with its first turn. A session's origin never changes: a
turn of one naming another origin is refused.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from agentsessions.controller.checked import Checked
from agentsessions.errors import InvalidArgumentError, LockHeldError, NotFoundError
from agentsessions.journal.stores.capabilities import KEY_CLAIMS
from agentsessions.journal.stores.store import SessionInfo, SessionMeta, new_uid
from agentsessions.v1.ids import check_uid
from agentsessions.v1.provenance import describe, same_origin
from agentsessions.v1.turn import TurnRequest
from agentsessions.valueclass import replace, value

from . import approvals, checks, resolving
from .claims import CLAIM_ANNOTATION, CLAIMS_HINT, SessionClaims, claim_key, settle
from .core import EngineCore
from .values import Frame, SessionFrame, Turn
from .views import turn_view, view

if TYPE_CHECKING:
    from agentsessions.controller.controller import Controller
    from agentsessions.controller.spi import Harness, HarnessDescriptor
    from agentsessions.tools.workload import Workload

_RETRY_SECONDS = 0.05


@value(frozen=True)
class Claim:
    """A checked turn holding its session's lock: the request (addressed to its session)."""

    request: TurnRequest
    lock: threading.Lock
    created: bool
    landed: bool = False  # its commit id landed: the controller answers with that turn
    state: SessionInfo | None = None
    """The session as its checks read it, holding its lock (None: not read): a streamed
    turn's first frame shows it without reading it again."""
    harness: tuple[Harness, HarnessDescriptor] | None = None
    """The harness its checks made and described (None: none made), for the turn to run."""

    def checked(self) -> Checked | None:
        """What the turn may take from the checks as it is (the session's state and
        harness), or None when they read neither."""
        if self.state is None or self.harness is None:
            return None
        return Checked(self.state, self.harness)

    @property
    def uid(self) -> str:
        return self.request.uid or ""


class TurnRunner:
    """Checks and runs an engine's turns over its :class:`~.core.EngineCore`."""

    def __init__(self, core: EngineCore, claims: SessionClaims) -> None:
        self.core = core
        self.claims = claims  # the engine's: a session named by origin is made as ensure makes it

    def check_turn(
        self, harness: str, model: str, chosen: str = "", project: str = ""
    ) -> tuple[Harness, HarnessDescriptor]:
        """Fail before anything is written on an unknown or unplaceable harness (``project``'s
        view), a bad model spec, or a model the request ``chosen`` for a harness calling none;
        the harness, made and described (the turn runs it: :class:`~agentsessions.controller.
        checked.Checked`)."""
        placed = self.core.controller().placed(harness, project)  # placement's home
        self.core.model_checks.check(model)  # once per engine and spec (:class:`.ModelChecks`)
        checks.check_model_use(harness, placed[1], chosen)
        return placed

    def exec(self, request: TurnRequest) -> Iterator[Frame]:
        """Run one turn on a worker thread; its frames (see :meth:`Sessions.exec`)."""
        claim = self.claim(request)
        return self._stream(claim, functools.partial(self._work, claim))

    def run(self, request: TurnRequest) -> SessionFrame:
        """Run one turn on the caller's thread; its last frame (see :meth:`Sessions.run`)."""
        claim = self.claim(request)
        try:
            controller = self.core.controller(claim.uid)
        except BaseException:
            claim.lock.release()
            raise
        work = functools.partial(self._work, claim)
        return self.core.turns.run_here(claim.uid, claim.lock, controller, work)

    def resume(self, uid: str, harness: str | None, wait: float) -> Iterator[Frame]:
        """Wake suspended compute and complete an open turn, if any; frames as for exec."""
        check_uid(uid)
        checks.check_wait(wait)
        self.core.store.get(uid)
        self.core.runtime()  # an unknown runtime fails before the session is touched
        lock = self.core.hold(uid, wait)
        claim = Claim(TurnRequest(uid, harness=harness or "", wait=wait), lock, False)

        def work(controller: Controller) -> tuple[Turn | None, bool]:
            woke = self._wake(controller, uid, wait)
            result = controller.resume(uid, harness=harness or "", wait_seconds=wait)
            return (turn_view(result) if result is not None else None), woke

        return self._stream(claim, work)

    # -- before the turn ------------------------------------------------------------------
    def claim(self, request: TurnRequest) -> Claim:
        """Check ``request``, make its session if it has none, and take the session's lock."""
        checks.check_request(request)  # the engine's durability: its controllers' default
        workload = checks.workload(request.tools)  # refused before anything is written
        if request.uid is None and request.origin is not None:
            return self._claim_origin(request, workload)
        state: SessionInfo | None = None
        placed: tuple[Harness, HarnessDescriptor] | None = None
        if request.uid is None:
            request.check_head(0)  # a new session's head is 0
            uid = self._create_for(request, workload)
            lock = self.core.hold(uid, request.wait)
        else:
            uid = request.uid  # checked (check_request)
            lock = self.core.hold(uid, request.wait)  # the state read next is then current
            try:
                if self._landed(request):  # nothing new: no head, approval or tools check
                    return Claim(request, lock, False, landed=True)
                state, placed = self._check_existing(request, workload)
            except BaseException:
                lock.release()
                raise
        if workload is not None:
            self.core.record_workload(uid, workload)
            state = None  # its tools are kept with it: read it again for the first frame
        if request.uid is not None:
            return Claim(request, lock, False, state=state, harness=placed)
        return Claim(replace(request, uid=uid), lock, True)  # addressed to its new session

    def _landed(self, request: TurnRequest) -> bool:
        """True if ``request`` carries a commit id that landed in its session already."""
        return bool(request.commit_id) and self.core.controller(request.uid or "").commit_landed(
            request
        )

    def _claim_origin(self, request: TurnRequest, workload: Workload | None) -> Claim:
        """:meth:`claim` of a turn naming its session by origin: the session that origin
        names, made (as ``Sessions.ensure`` makes one, atomically) if there is none, after
        every check a new session's turn gets; then the turn is one of that session."""
        claims = KEY_CLAIMS.need(self.core.store, "a turn by origin", hint=CLAIMS_HINT)
        ck, origin = claim_key(None, request.origin, request.project)
        uid, created = self._live(claims.lookup(ck)), False  # the common case: it exists
        if not uid:
            named = request.harness or _default_harness()
            self._check_new(request, workload, named)
            meta = replace(
                self._new_meta(request, named),
                origin=origin,
                annotations={CLAIM_ANNOTATION: ck.digest},
            )
            made = functools.partial(self.claims.store_new, workload=None)
            session, created = settle(self.core.store, claims, ck, meta, made)
            uid = session.uid
        if created:
            request.check_head(0)
        request = replace(request, uid=uid)
        lock = self.core.hold(uid, request.wait)
        try:
            if not created:
                self._check_existing(request, workload)
            if workload is not None:
                self.core.record_workload(uid, workload)
        except BaseException:
            lock.release()
            raise
        return Claim(request, lock, created)

    def _live(self, uid: str) -> str:
        """``uid`` if it names a live session, else "" (none yet, or deleted): read from
        the writer the engine holds when it holds one, so a reused origin costs no read."""
        if not uid:
            return ""
        try:
            return "" if self.core.state(uid).deleted else uid
        except NotFoundError:
            return ""

    def _check_existing(
        self, request: TurnRequest, workload: Workload | None
    ) -> tuple[SessionInfo, tuple[Harness, HarnessDescriptor]]:
        """The checks of a turn of an existing session, made holding its lock; its state and
        harness."""
        uid = request.uid or ""
        info = self.core.state(uid)
        if request.origin is not None and not same_origin(request.origin, info.meta.origin):
            raise InvalidArgumentError(
                f"session {uid} has origin {describe(info.meta.origin)}, not "
                f"{describe(request.origin)}: a session's origin never changes",
                session=uid,
            )
        request.check_head(info.last_seq, info.last_hash)
        if request.inputs:  # new input waits for an open approval's receipt
            approvals.check_no_open_approval(self.core.store, info)
            resolving.check_not_unresolved(self.core.store, info)
        named = request.harness or info.meta.harness or _default_harness()
        # its project's registered harnesses are the ones it may run on
        placed = self.check_turn(
            named, request.model or info.meta.model, request.model, info.meta.project
        )
        if workload is not None:  # a harness it keeps out of the conversation: nothing written
            workload.check_harness(uid, named)
        return info, placed

    def _create_for(self, request: TurnRequest, workload: Workload | None) -> str:
        """Check a new session's turn, then have its session made; its uid."""
        named = request.harness or _default_harness()
        self.check_turn(named, request.model, request.model, request.project)
        if workload is not None:  # a harness it keeps out of the conversation: nothing written
            workload.check_harness("(new)", named)
        meta = self._new_meta(request, named)
        controller = self.core.controller()  # its checks, its harness, then the session
        made = controller.create_session(
            meta, request, tools=workload is not None, guard=self.core.catalog_lock
        )
        return made[0]

    def _check_new(self, request: TurnRequest, workload: Workload | None, named: str) -> None:
        """Every check of a new session's turn, its first commit's included (nothing is
        written): what :meth:`_create_for` has the controller check before it creates."""
        self.check_turn(named, request.model, request.model, request.project)
        if workload is not None:  # a harness it keeps out of the conversation: nothing written
            workload.check_harness("(new)", named)
        self.core.controller().check_exec(
            request.inputs, harness=named, config=request.config, tools=workload is not None,
            project=request.project, actors=request.actors,
        )  # fmt: skip

    def _new_meta(self, request: TurnRequest, named: str) -> SessionMeta:
        """A new session's metadata: the request's, and the engine's defaults (only here)."""
        return SessionMeta(
            uid=new_uid(),
            project=request.project,
            name=request.name,
            harness=named,
            model=request.model or self.core.default_model,
            labels=dict(request.labels),
            identity=request.identity,
            create_time_ns=time.time_ns(),
        )

    # -- the turn ---------------------------------------------------------------------------
    def _work(self, claim: Claim, controller: Controller) -> tuple[Turn | None, bool]:
        """The turn itself, on ``controller``: the turn and whether compute was woken."""
        request, uid = claim.request, claim.uid
        checked = claim.checked()  # the state and harness its checks found, if they did
        if claim.created or request.fresh_start or claim.landed:  # a fresh start wakes
            result = controller.turn(request, checked=checked)  # compute itself
            return turn_view(result, claim.created), False
        info = checked.info if checked is not None else controller.info(uid)
        woke = self._wake(controller, uid, request.wait, info)
        if woke:  # the wake's own records moved the head (and its state): read them again
            checked = None
            request = request.moved(controller.info(uid).last_seq - info.last_seq)
        return turn_view(controller.turn(request, checked=checked)), woke

    @staticmethod
    def _wake(
        controller: Controller, uid: str, wait: float, info: SessionInfo | None = None
    ) -> bool:
        """Bring a suspended session's compute back (LIFECYCLE_RESUME); True if it was COLD.
        ``info``: the session's state, when the caller has read it holding the lock.

        A busy session is retried until ``wait`` seconds have passed, as the turn itself is.
        """
        if (info or controller.info(uid)).compute_state != "COMPUTE_COLD":
            return False
        # imported only for a cold session: an import statement costs every turn ~1 us
        from agentsessions.controller.lifecycle import resume_compute

        deadline = time.monotonic() + wait
        while True:
            try:
                resume_compute(controller, uid)
                return True
            except LockHeldError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(_RETRY_SECONDS)

    def _stream(
        self, claim: Claim, work: Callable[[Controller], tuple[Turn | None, bool]]
    ) -> Iterator[Frame]:
        """Start ``work`` on a worker thread holding the claim's lock; its frames."""
        try:
            controller = self.core.controller(claim.uid)
            state = claim.state or self.core.state(claim.uid)  # read under its lock already
            first = SessionFrame(view(state), created=claim.created)
        except BaseException:
            claim.lock.release()
            raise
        return self.core.turns.start(claim.uid, claim.lock, controller, first, work)


def _default_harness() -> str:
    """The controller's harness default (its home), imported when a turn needs it: the
    controller's rules load its SPI (~6 ms), which ``list``, ``get`` and ``--help`` never use."""
    from agentsessions.controller.rules import DEFAULT_HARNESS

    return DEFAULT_HARNESS

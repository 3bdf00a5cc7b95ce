"""The engine's sessions by key: ``Sessions.ensure``, ``find`` and ``claim``, and ``create``.

A key is a string of the caller's that names one session of a project (a framework's
conversation or thread id; issue 22's origin, its ``source`` and ``subject``). The key is
opaque here, so whatever derives it does so in one place of its own, injectively (e.g. the
JSON of ``[source, subject]``, so that no two origins share a key the way ``"a:b" + "c"``
and ``"a" + "b:c"`` would if joined by a colon). The store
binds it atomically (:mod:`agentsessions.journal.stores.claims`), so one lookup finds the
session (no listing) and processes racing on a new key create one session.

How :meth:`SessionClaims.ensure` stays correct when a process dies anywhere in it: it claims
the key for a fresh uid *first* (durably), then creates that uid if no session has it. A
crash between the two leaves a claim without a session; the next ``ensure`` of the key finds
the claim, sees no session and creates it (every store's create of one uid is exclusive:
SessionExistsError to the loser, which then returns the winner's). A claim bound to a
deleted session (a delete cut before its release) is released and claimed anew. So every
caller of ``ensure`` of one key gets the same uid, and exactly one of them ``created``.

An origin (:mod:`agentsessions.v1.provenance`) is a key too: its ``source`` and
``subject`` as a JSON array, claimed in a key space of its own (``ClaimKey.of(...,
space="origin")``), so no key of a caller's names an origin's session. ``create`` with an
origin claims it as ``ensure`` does, and refuses (SessionExistsError) when it names a live
session already: an origin names one session.

A session ``ensure`` creates carries its key's digest in the annotation
:data:`CLAIM_ANNOTATION`, so deleting it releases the key at once; a session bound by
:meth:`SessionClaims.claim` (made otherwise, e.g. by a fork) has its key released lazily:
the next ``ensure`` finds it deleted and releases it.

:class:`SessionClaims` is the engine's collaborator for these (over its
:class:`~.core.EngineCore`, as the turns, lifecycle and approvals are); what needs no engine
(:func:`settle`, :func:`claim_key`, :func:`release_claim`) is plain functions the turns use
too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from os import PathLike
from typing import TYPE_CHECKING, Any

from agentsessions.errors import (
    InvalidArgumentError,
    LockHeldError,
    NotFoundError,
    SessionExistsError,
)
from agentsessions.journal.stores.capabilities import KEY_CLAIMS
from agentsessions.journal.stores.claims import ClaimKey, KeyClaims
from agentsessions.journal.stores.store import (
    SessionInfo,
    SessionMeta,
    Store,
    deleted_error,
    new_uid,
)
from agentsessions.v1.ids import check_project, check_uid
from agentsessions.v1.model import Origin
from agentsessions.v1.provenance import (
    ORIGIN_SPACE,
    check_identity,
    describe,
    named_by,
    origin_key,
)
from agentsessions.valueclass import replace

from . import checks
from .values import Session
from .views import view

if TYPE_CHECKING:
    from agentsessions.tools.workload import Workload

    from .core import EngineCore

CLAIM_ANNOTATION = "agentsessions.claim"
"""The annotation naming the digest of the key a session was created for by ``ensure``."""
_TRIES = 8  # rounds of "bound to a deleted session: release, claim again"


class SessionClaims:
    """Creating sessions and finding them by key, over an engine's :class:`~.core.EngineCore`:
    the engine's ``create``, ``ensure``, ``find`` and ``claim``, and what an import of a
    session with an origin needs (see the module docstring)."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    def prepare(
        self,
        *,
        project: str,
        name: str,
        harness: str,
        model: str,
        labels: Mapping[str, str] | None,
        annotations: Mapping[str, str] | None,
        tools: str | PathLike[str] | None,
        origin: Origin | None = None,
        identity: Mapping[str, str] | None = None,
    ) -> tuple[SessionMeta, Workload | None]:
        """A new session's metadata (a fresh uid) and workload, every option checked first: an
        unknown model provider, a model for a harness calling none, a bad workload file, a
        malformed identity (``origin`` is checked already: :func:`claim_key`)."""
        self.core.model_checks.check(model)  # an unknown provider: refused before the session
        checks.check_model_of(harness, model, project)
        workload = checks.workload(tools)
        meta = SessionMeta(
            uid=new_uid(),
            project=check_project(project),
            name=name,
            harness=harness,
            model=model,
            labels=dict(labels or {}),
            annotations=dict(annotations or {}),
            origin=origin,
            identity=check_identity(identity),
            create_time_ns=time.time_ns(),
        )
        return meta, workload

    def store_new(self, meta: SessionMeta, workload: Workload | None) -> Session:
        """Create the prepared session (SessionExistsError if its uid has one already)."""
        with self.core.catalog_lock:
            info = self.core.store.create(meta)
            if workload is not None:
                self.core.record_workload(info.uid, workload)
            return view(info)

    def create(
        self,
        *,
        project: str = "default",
        name: str = "",
        harness: str = "",
        model: str = "",
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        tools: str | PathLike[str] | None = None,
        origin: Mapping[str, Any] | None = None,
        identity: Mapping[str, str] | None = None,
    ) -> Session:
        """Create an empty session; an unknown model provider or a bad workload is refused
        first; ``tools`` (a workload file) is recorded with the session. With an ``origin``
        the session is the one it names (claimed as :meth:`ensure` claims), SessionExistsError
        if it names a live session already."""
        if origin is not None:
            made, created = self.ensure(
                origin=origin, identity=identity, project=project, name=name,
                harness=harness, model=model, labels=labels, annotations=annotations, tools=tools,
            )  # fmt: skip
            if not created:
                raise _origin_taken(origin, made.uid)
            return made
        meta, workload = self.prepare(
            project=project, name=name, harness=harness, model=model, labels=labels,
            annotations=annotations, tools=tools, identity=identity,
        )  # fmt: skip
        return self.store_new(meta, workload)

    def ensure(
        self,
        key: str | None = None,
        *,
        origin: Mapping[str, Any] | None = None,
        identity: Mapping[str, str] | None = None,
        project: str = "default",
        name: str = "",
        harness: str = "",
        model: str = "",
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        tools: str | PathLike[str] | None = None,
    ) -> tuple[Session, bool]:
        """The live session ``key`` (or ``origin``: one of them) names in ``project``, created
        (with these options, as :meth:`create`) if there is none: ``(session, created)``.
        Atomic across processes and hosts; see the module docstring."""
        ck, checked = claim_key(key, origin, project)
        claims = KEY_CLAIMS.need(self.core.store, "a session by key", hint=CLAIMS_HINT)
        meta, workload = self.prepare(
            project=project, name=name, harness=harness, model=model, labels=labels,
            annotations={**(annotations or {}), CLAIM_ANNOTATION: ck.digest}, tools=tools,
            origin=checked, identity=identity,
        )  # fmt: skip
        return settle(
            self.core.store, claims, ck, meta, lambda made: self.store_new(made, workload)
        )

    def find(
        self,
        key: str | None = None,
        *,
        origin: Mapping[str, Any] | None = None,
        project: str = "default",
    ) -> Session | None:
        """The live session ``key`` (or ``origin``: one of them) names in ``project``, or None:
        one claim lookup and one session read, never a listing. A key claimed whose session is
        not made yet (or was deleted) is None; nothing is written."""
        ck = claim_key(key, origin, project)[0]
        claims = KEY_CLAIMS.need(self.core.store, "a session by key", hint=CLAIMS_HINT)
        info = _existing(self.core.store, claims.lookup(ck))
        return view(info) if info is not None and not info.deleted else None

    def claim(self, key: str, uid: str, *, project: str = "default") -> str:
        """Bind ``key`` in ``project`` to existing session ``uid`` (a fork's child, say) if the
        key names no live session; the uid it names then: ``uid``, or the session's that had
        it. NotFoundError for an unknown ``uid``, SessionDeletedError for a deleted one,
        InvalidArgumentError for one of another project."""
        ck = ClaimKey.of(project, key)
        info = self.core.store.get(check_uid(uid))
        if info.meta.project != project:
            raise InvalidArgumentError(
                f"session {uid} is in project {info.meta.project!r}, not {project!r}", session=uid
            )
        if info.deleted:
            raise deleted_error(uid)
        claims = KEY_CLAIMS.need(self.core.store, "a session by key", hint=CLAIMS_HINT)
        return _bind(self.core.store, claims, ck, uid)

    def import_meta(self, meta: SessionMeta) -> SessionMeta:
        """An imported session's metadata as this engine keeps it, before it is created: the
        exporting store's key claim dropped (its key is unknown here), and with an origin,
        that origin's claim (in the session's project here) named instead; SessionExistsError
        when the origin names a live session here already, so nothing is imported."""
        annotations = {k: v for k, v in meta.annotations.items() if k != CLAIM_ANNOTATION}
        ck = _origin_claim(self.core.store, meta)
        if ck is not None:
            claims = KEY_CLAIMS.need(self.core.store, "import")
            other = _existing(self.core.store, claims.lookup(ck))
            if other is not None and not other.deleted:
                raise _origin_taken(meta.origin, other.uid)
            annotations[CLAIM_ANNOTATION] = ck.digest
        return replace(meta, annotations=annotations)

    def claim_imported(self, info: SessionInfo) -> None:
        """Make an imported session the one its origin names (see :meth:`import_meta`); if
        another live session took the origin meanwhile, the import is deleted and
        SessionExistsError raised."""
        ck = _origin_claim(self.core.store, info.meta)
        if ck is None:
            return
        bound = _bind(self.core.store, KEY_CLAIMS.need(self.core.store, "import"), ck, info.uid)
        if bound != info.uid:
            self.core.store.delete(info.uid)
            raise _origin_taken(info.meta.origin, bound)


def settle(
    store: Store,
    claims: KeyClaims,
    ck: ClaimKey,
    meta: SessionMeta,
    make: Callable[[SessionMeta], Session],
) -> tuple[Session, bool]:
    """The live session ``ck`` names, made by ``make`` (a create of the metadata it is
    given, SessionExistsError when its uid has a session) from ``meta`` if there is none:
    ``(session, created)``. The claim is durable before anything is made (module)."""
    for _ in range(_TRIES):
        bound = claims.lookup(ck)
        info = _existing(store, bound)
        if info is None:  # unbound, or claimed by a process that has not created it yet
            bound = claims.claim(ck, bound or meta.uid)  # durable before anything is made
            info = _existing(store, bound)
        if info is None:
            try:
                return make(replace(meta, uid=bound)), True
            except SessionExistsError:  # another process completed the claim first
                info = store.get(bound)
        if not info.deleted:
            return view(info), False
        claims.release(ck, bound)  # its delete was cut before it released the key
        meta = replace(meta, uid=new_uid())
    raise LockHeldError(f"the key's session in project {meta.project!r} kept being deleted")


def claim_key(
    key: str | None, origin: Mapping[str, Any] | None, project: str
) -> tuple[ClaimKey, Origin | None]:
    """The claim key of ``key`` or of ``origin`` (exactly one), and the origin checked."""
    checked = named_by(key, origin)
    if checked is not None:
        return ClaimKey.of(project, origin_key(checked), space=ORIGIN_SPACE), checked
    return ClaimKey.of(project, key or ""), None


def _bind(store: Store, claims: KeyClaims, ck: ClaimKey, uid: str) -> str:
    """Bind ``ck`` to existing session ``uid`` unless it names a live session: the uid it
    names then (``uid``, or the live one's; a claim to a deleted one is released)."""
    for _ in range(_TRIES):
        bound = claims.claim(ck, uid)
        other = _existing(store, bound) if bound != uid else None
        if other is None or not other.deleted:
            return bound  # ours, another live one, or one its claimer is about to create
        claims.release(ck, bound)
    raise LockHeldError(f"the key's session in project {ck.project!r} kept being deleted")


def _origin_claim(store: Store, meta: SessionMeta) -> ClaimKey | None:
    """The claim key of ``meta``'s origin, None without one (or one that is not an origin
    by our rules, from another writer, or a store that keeps no claims)."""
    if meta.origin is None or KEY_CLAIMS.of(store) is None:
        return None
    try:
        return claim_key(None, meta.origin, meta.project)[0]
    except InvalidArgumentError:
        return None


def _origin_taken(origin: Mapping[str, Any] | None, uid: str) -> SessionExistsError:
    return SessionExistsError(
        f"origin {describe(origin)} names session {uid} already; nothing was created",
        hint="find it by its origin, or run a turn on it by its origin (exec with an "
        "origin and no session)",
        session=uid,
    )


CLAIMS_HINT = "use the file, memory or JetStream store"
"""What a refusal says when the store keeps no key claims."""


def release_claim(store: Store, info: SessionInfo) -> None:
    """Release the key a deleted session was created for by ``ensure``, if any."""
    digest = info.meta.annotations.get(CLAIM_ANNOTATION, "")
    claims = KEY_CLAIMS.of(store)
    if digest and claims is not None:
        claims.release(ClaimKey.from_digest(info.meta.project, digest), info.uid)


def _existing(store: Store, uid: str) -> SessionInfo | None:
    """``uid``'s session, None for "" or a uid without one."""
    if not uid:
        return None
    try:
        return store.get(uid)
    except NotFoundError:
        return None

"""What a request needs before anything is written: the engine's checks of exec, fork and a
turn's harness and model.

Every check here raises before the store is touched (InvalidArgumentError, exit 2;
PlacementError for a harness the runtime cannot host), so a refused request leaves no
session and no record behind. :class:`~.local.LocalSessions` exposes the store-free ones
as its static methods, which a front end may call before it opens a home.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from os import PathLike
from typing import TYPE_CHECKING

from agentsessions.errors import InvalidArgumentError
from agentsessions.v1.ids import check_project, check_uid
from agentsessions.v1.turn import (
    DEFAULT_PROJECT,
    TurnRequest,
    check_commit_id,
    check_durability,
)

from .wiring import HARNESSES

if TYPE_CHECKING:
    from agentsessions.controller.spi import HarnessDescriptor
    from agentsessions.tools.workload import Workload

PROG = "agentsessions"


def check_request(request: TurnRequest) -> None:
    """The checks of an exec that need no store (a front end may make them before it
    opens one): a well-formed uid, a new session's input and project, the flags that
    only describe a new session, ``fresh_start`` and ``commit_id`` only on an existing one."""
    check_wait(request.wait)
    check_commit_id(request.commit_id)
    check_durability(request.durability)
    if request.uid is not None:
        check_uid(request.uid)
    creating = request.project != DEFAULT_PROJECT or bool(request.name or request.labels)
    if request.uid is None:
        check_project(request.project)
        if not request.inputs:
            raise InvalidArgumentError(
                "a new session needs an input: exec without a session creates one from it",
                param="inputs",
            )
        if request.fresh_start:
            raise InvalidArgumentError(
                "fresh_start applies to an existing session: a new one starts empty anyway",
                param="fresh_start",
            )
        if request.commit_id:  # its ids are the session's: a retry would make a second one
            raise InvalidArgumentError(
                "a commit id applies to a turn of an existing session: a retry of a turn "
                "that creates one would create another",
                hint="create the session first (create, or ensure by key), then exec with the id",
                param="commit_id",
            )
    elif request.commit_id and request.fresh_start:  # a fresh start is recorded each time
        raise InvalidArgumentError(
            "a commit id cannot ride with fresh_start: the fresh start would be recorded again "
            "on every retry",
            hint="make the fresh start its own turn, without a commit id",
            param="commit_id",
        )
    elif creating:
        raise InvalidArgumentError(
            "a project, name or labels apply only when exec creates a session",
            hint="leave out the session to create one, or fork this one to branch it",
            param="new_session",
        )


MAX_WAIT_SECONDS = float(int(threading.TIMEOUT_MAX))
"""The longest wait a lock can be asked for (about 292 years here): beyond it, and for inf or
NaN, the platform's timed lock cannot take the timeout at all."""


def check_wait(wait: float) -> float:
    """Return ``wait`` (seconds) if a lock can wait that long: finite, 0 to
    :data:`MAX_WAIT_SECONDS`; else InvalidArgumentError, before anything is touched."""
    if not (math.isfinite(wait) and 0 <= wait <= MAX_WAIT_SECONDS):
        raise InvalidArgumentError(
            f"wait must be a finite number of seconds from 0 to {MAX_WAIT_SECONDS:.0f}, got {wait}",
            param="wait",
        )
    return wait


def check_fork(at: int, count: int, names: Sequence[str]) -> None:
    """A fork request's own checks (counts, names, seq), made before any store is used."""
    from agentsessions.controller.lifecycle import ForkRequest

    if isinstance(names, str):
        raise InvalidArgumentError("names must be a sequence of names, not one string")
    ForkRequest(at_seq=at, count=count, names=tuple(names)).check()


def check_model_of(harness: str, model: str, project: str = "") -> None:
    """:func:`check_model_use` for ``create``: only when it names both (a session created
    with a model and no harness may run its turns with one that calls it)."""
    if harness and model:
        check_model_use(harness, HARNESSES.create(harness, project=project).describe(), model)


def check_model_use(harness: str, descriptor: HarnessDescriptor, model: str) -> None:
    """Refuse a request that names ``model`` for a harness that declares it calls no model
    of the session's choosing (echo, counter, memory): the turn would run without it while
    the session records it, and the user would believe they talked to it. A harness that
    declares nothing (None: a plugin or remote harness that predates the declaration) is
    let through."""
    if not model or descriptor.capabilities.uses_session_model is not False:
        return
    if model in descriptor.models:  # the fixed model it does call (echo's "echo")
        return
    doing = model_harnesses()
    raise InvalidArgumentError(
        f"harness {harness!r} calls no model of the session's choosing, so model {model!r} "
        f"would never be called; harnesses that call it: {', '.join(doing) or 'none'}; "
        "nothing was written",
        hint=f"{PROG} exec --harness {doing[0]} --model {model}" if doing else "",
    )


def model_harnesses() -> list[str]:
    """The built-in and installed harnesses that declare they call the session's model
    (remote registrations are not asked: that is a network call per name)."""
    from .harnessbook import BUILT_IN

    names = []
    for name in sorted({*BUILT_IN, *HARNESSES.installed()}):
        try:
            uses = HARNESSES.create(name).describe().capabilities.uses_session_model
        except Exception:  # a plugin that cannot describe itself is not listed
            continue
        if uses:
            names.append(name)
    return names


class ModelChecks:
    """Refuses a malformed model spec (parses and checks options; touches no network).

    Each spec is checked once per engine: the controller keeps the provider it builds from
    a spec, so checking again each turn (a scripted model re-reads its file) would only
    add a cost that grows with the script. The current call's model guard
    (:func:`agentsessions.models.catalog.guard_model`) runs every time, first: what a
    caller may not use is refused even when the engine checked it for another. A NAME of
    ``catalog`` is checked as its SPEC. Thread-safe.
    """

    def __init__(self, catalog: Mapping[str, str] | None = None) -> None:
        self._lock = threading.Lock()
        self._checked: set[str] = set()  # specs already parsed and checked
        self._catalog = catalog or {}
        self._guard: Callable[[str], None] | None = None  # the models' guard, once imported

    def check(self, spec: str) -> None:
        """Raise the provider's error for a bad ``spec``; "" (the default) always passes."""
        if spec:
            guard = self._guard
            if guard is None:  # imported once: ``list`` never loads it, an import costs a turn
                from agentsessions.models.catalog import guard_model

                guard = self._guard = guard_model
            guard(spec)
        if not spec or spec in self._checked:
            return
        from agentsessions.models import create_model

        create_model(spec, catalog=self._catalog)
        with self._lock:
            self._checked.add(spec)


def catalog(models: Mapping[str, str] | None) -> Mapping[str, str]:
    """The engine's model catalog, checked (:class:`~agentsessions.models.catalog.ModelCatalog`;
    the models package is imported only when there is one: ``list`` never needs it)."""
    if not models:
        return {}
    from agentsessions.models.catalog import ModelCatalog

    return models if isinstance(models, ModelCatalog) else ModelCatalog(models)


def workload(tools: str | PathLike[str] | None) -> Workload | None:
    """The validated workload file ``tools`` names, or None."""
    if tools is None or tools == "":
        return None
    from agentsessions.tools.workload import load_workload

    return load_workload(os.fspath(tools))

"""Runtimes by name: where harness compute runs and what of its memory survives.

``auto`` (the default) puts each harness where its resumability says: ``local`` for a
STATELESS_REPLAY harness, ``warm`` for a REQUIRES_MEMORY_SNAPSHOT one.
``local`` runs the harness in the calling process (cold suspend, state rebuilt by replay);
``warm`` keeps it in a detached host process whose memory survives the CLI process and can
be snapshotted and forked (see :mod:`agentsessions.runtimes.warm`); ``remote`` attaches to
harnesses served at an address (:mod:`agentsessions.runtimes.remote`). Other runtimes register
under the ``agentsessions.runtimes`` entry-point group; a factory that takes a keyword
``home`` receives the store's home from :func:`create_runtime`. On the layer map
(:mod:`agentsessions`) beside ``models`` and ``tools``: over the controller, under ``sessions``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import cast

from agentsessions.controller.registry import Registry
from agentsessions.controller.spi import Runtime
from agentsessions.errors import InvalidArgumentError

RUNTIMES: Registry[Runtime] = Registry("runtime", "agentsessions.runtimes")


def _local() -> Runtime:
    from agentsessions.runtimes.local import LocalRuntime

    return LocalRuntime()


def _warm(*, home: Path | None = None) -> Runtime:
    if home is None:
        raise InvalidArgumentError(
            "the warm runtime keeps its hosts under the store's home: use "
            "create_runtime('warm', home=...)"
        )
    from agentsessions.runtimes.warm import WarmRuntime

    return WarmRuntime(home)


def _auto(*, home: Path | None = None) -> Runtime:
    if home is None:
        raise InvalidArgumentError("the auto runtime needs the store's home: create_runtime")
    from agentsessions.runtimes.auto import AutoRuntime

    return AutoRuntime(home)


def _remote() -> Runtime:
    from agentsessions.runtimes.remote import RemoteRuntime

    return RemoteRuntime()


RUNTIMES.register("local", _local)
RUNTIMES.register("remote", _remote)
RUNTIMES.register("warm", _warm)
RUNTIMES.register("auto", _auto)


def create_runtime(name: str, *, home: Path) -> Runtime:
    """The runtime called ``name``, bound to the store's ``home`` if it takes one.

    InvalidArgumentError lists the known names when ``name`` is unknown.
    """
    factory = RUNTIMES.factory(name)
    if _takes_home(factory):
        return cast(Callable[..., Runtime], factory)(home=Path(home))
    return factory()


def _takes_home(factory: Callable[[], Runtime]) -> bool:
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    home = parameters.get("home")
    return home is not None and home.kind in (home.KEYWORD_ONLY, home.POSITIONAL_OR_KEYWORD)

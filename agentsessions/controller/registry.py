"""Registries by name: how the core finds harnesses, model providers and runtimes.

The core never imports a concrete harness. A name resolves, in order, to an explicit
registration, a module by convention (``harnesses.<name>`` exposing ``create``: the shipped
ones, which is how the single-file app, carrying no entry-point metadata, finds them), and
finally a Python entry point in the group (``agentsessions.harnesses`` and so on). The
shipped modules come before the entry points for two reasons: a shipped name means the
shipped harness whatever else is installed (a plugin cannot shadow ``echo``), and resolving
one costs no scan of every installed distribution's metadata (importing
``importlib.metadata`` and scanning took ~10 ms of a one-turn ``exec``'s start).

A registration may belong to one project (``register(name, factory, project=P)``: a harness
a caller registered through the HarnessRegistry): only a lookup for that project finds it,
and for any other project the name is unknown, word for word as a name nobody registered,
so one project's harness is never run (nor its address dialled) for another's session.
Names registered for a project live beside the shared ones (a shared one wins a lookup);
the HarnessBook refuses a project name that a shared one already has.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from agentsessions.errors import InvalidArgumentError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

T = TypeVar("T")
_NAME = re.compile(r"[a-z][a-z0-9-]{0,62}")


class Registry(Generic[T]):
    """Factories by name for one kind of component."""

    def __init__(self, kind: str, group: str, convention: str = "") -> None:
        self.kind = kind
        self.group = group
        self.convention = convention
        # keyed by (project, name); project "" is the shared table every lookup sees
        self._factories: dict[tuple[str, str], Callable[[], T]] = {}
        self._retired: dict[tuple[str, str], tuple[str, str]] = {}  # why not, what helps

    def register(self, name: str, factory: Callable[[], T], *, project: str = "") -> None:
        """Make ``name`` resolve to ``factory`` (replacing any earlier registration); with
        ``project``, only for lookups on that project's behalf."""
        if not _NAME.fullmatch(name):
            raise InvalidArgumentError(f"invalid {self.kind} name {name!r}: a DNS label")
        self._factories[project, name] = factory
        self._retired.pop((project, name), None)

    def unregister(
        self, name: str, retired: str = "", hint: str = "", *, project: str = ""
    ) -> None:
        """Forget an explicit registration of ``name`` (``project``'s); ``retired`` (a
        retired remote harness: why) makes a lookup say so, with ``hint``, rather than call
        it unknown."""
        self._factories.pop((project, name), None)
        if retired:
            self._retired[project, name] = (retired, hint)

    def factory(self, name: str, *, project: str = "") -> Callable[[], T]:
        """The factory for ``name`` as ``project`` sees it (the shared registrations, then
        its own: what the operator defines wins), or InvalidArgumentError listing the names
        it may use."""
        for key in (("", name), (project, name)) if project else (("", name),):
            if key in self._factories:
                return self._factories[key]
            if key in self._retired:
                why, hint = self._retired[key]
                raise InvalidArgumentError(f"{self.kind} {name!r} is retired: {why}", hint=hint)
        found = self._from_convention(name) or self._from_entry_points(name)
        if found is None:
            known = ", ".join(self.names(project=project)) or "none"
            raise InvalidArgumentError(f"unknown {self.kind} {name!r} (known: {known})")
        self._factories["", name] = found
        return found

    def create(self, name: str, *, project: str = "") -> T:
        """A new instance of ``name`` as ``project`` sees it."""
        return self.factory(name, project=project)()

    def names(self, *, project: str = "") -> list[str]:
        """Every name a lookup for ``project`` can resolve without guessing (the shared
        ones and that project's own)."""
        names = {n for p, n in self._factories if p in ("", project)}
        names.update(ep.name for ep in _entry_points(self.group))
        return sorted(names)

    def shared(self, name: str) -> bool:
        """True if ``name`` resolves for every project (registered shared, an entry point
        or a module by convention): a project may not register it for itself."""
        if ("", name) in self._factories:
            return True
        try:
            self.factory(name)
        except InvalidArgumentError:
            return False
        return True

    def installed(self) -> list[str]:
        """The names installed plugins provide (entry points), without explicit registrations
        (a remote harness's name is one: asking it anything is a network call)."""
        return sorted({ep.name for ep in _entry_points(self.group)})

    def _from_entry_points(self, name: str) -> Callable[[], T] | None:
        for ep in _entry_points(self.group, name):
            loaded: Callable[[], T] = ep.load()
            return loaded
        return None

    def _from_convention(self, name: str) -> Callable[[], T] | None:
        if not self.convention or not _NAME.fullmatch(name):
            return None
        try:
            module = importlib.import_module(f"{self.convention}.{name.replace('-', '_')}")
        except ModuleNotFoundError:
            return None
        create: Callable[[], T] | None = getattr(module, "create", None)
        return create


def _entry_points(group: str, name: str | None = None) -> list[EntryPoint]:
    """The installed entry points of ``group`` (only ``name``'s, if given).

    ``importlib.metadata`` is imported here, not at module level: importing it and scanning
    every installed distribution costs a command line several milliseconds, and only a
    registry lookup by name (a harness about to run) needs it.
    """
    import importlib.metadata

    eps = importlib.metadata.entry_points(group=group)
    return [ep for ep in eps if name is None or ep.name == name]

"""Registries by name: how the core finds harnesses, model providers and runtimes.

The core never imports a concrete harness. A name resolves, in order, to an explicit
registration, a Python entry point in the group (``agentsessions.harnesses`` and so on),
and finally a module by convention (``harnesses.<name>`` exposing ``create``), which is how
the single-file app, which carries no entry-point metadata, finds the shipped ones.
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
        self._factories: dict[str, Callable[[], T]] = {}
        self._retired: dict[str, tuple[str, str]] = {}  # name -> why not, and what helps

    def register(self, name: str, factory: Callable[[], T]) -> None:
        """Make ``name`` resolve to ``factory`` (replacing any earlier registration)."""
        if not _NAME.fullmatch(name):
            raise InvalidArgumentError(f"invalid {self.kind} name {name!r}: a DNS label")
        self._factories[name] = factory
        self._retired.pop(name, None)

    def unregister(self, name: str, retired: str = "", hint: str = "") -> None:
        """Forget an explicit registration of ``name``; ``retired`` (a retired remote
        harness: why) makes a lookup say so, with ``hint``, rather than call it unknown."""
        self._factories.pop(name, None)
        if retired:
            self._retired[name] = (retired, hint)

    def factory(self, name: str) -> Callable[[], T]:
        """The factory for ``name``, or InvalidArgumentError listing the known names."""
        if name in self._factories:
            return self._factories[name]
        if name in self._retired:
            why, hint = self._retired[name]
            raise InvalidArgumentError(f"{self.kind} {name!r} is retired: {why}", hint=hint)
        found = self._from_entry_points(name) or self._from_convention(name)
        if found is None:
            known = ", ".join(self.names()) or "none"
            raise InvalidArgumentError(f"unknown {self.kind} {name!r} (known: {known})")
        self._factories[name] = found
        return found

    def create(self, name: str) -> T:
        return self.factory(name)()

    def names(self) -> list[str]:
        """Every name this registry can resolve without guessing."""
        names = set(self._factories)
        names.update(ep.name for ep in _entry_points(self.group))
        return sorted(names)

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

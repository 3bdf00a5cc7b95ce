"""Names that cross a process boundary: harness factory refs and warm snapshot refs.

A process that did not create a compute knows only strings: the session uid and the
journal's ``SnapshotRef`` fields. So a harness factory travels as ``"module:attr"``
(``attr`` may be dotted) and a warm memory snapshot as ``SnapshotRef.local`` of the form
``"warm:<16 hex digits>"``. Both are validated when parsed, so a ref never becomes a path
or an import of something else.
"""

from __future__ import annotations

import importlib
import re
import secrets
from collections.abc import Callable
from typing import Any, cast

from agentsessions.controller.spi import Harness, HarnessFactory, SnapshotRef
from agentsessions.errors import PlacementError
from agentsessions.valueclass import value

_REF = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
_SNAPSHOT = re.compile(r"warm:([0-9a-f]{16})")
WARM_PREFIX = "warm:"


@value(frozen=True)
class FactoryRef:
    """A harness factory named by ``"module:attr"``: callable, and importable elsewhere."""

    ref: str

    def __post_init__(self) -> None:
        if not _REF.fullmatch(self.ref):
            raise PlacementError(f"harness factory ref {self.ref!r} is not 'module:attr'")

    def __call__(self) -> Harness:
        return load_factory(self.ref)()


def load_factory(ref: str) -> HarnessFactory:
    """Import ``"module:attr"`` and return the factory it names.

    Raises PlacementError when the ref is malformed, the module does not import or the
    attribute is missing or not callable.
    """
    if not _REF.fullmatch(ref):
        raise PlacementError(f"harness factory ref {ref!r} is not 'module:attr'")
    module_name, _, attr = ref.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise PlacementError(f"cannot load harness factory {ref!r}: {exc}") from None
    if not callable(target):
        raise PlacementError(f"harness factory {ref!r} is not callable")
    return cast(Callable[[], Harness], target)


def factory_ref(factory: HarnessFactory) -> str:
    """The ``"module:attr"`` that names ``factory`` in another process.

    A :class:`FactoryRef` names itself; a module-level function or class is named by its
    module and qualified name, provided importing that name gives back the very same
    object. Lambdas, closures, bound methods and ``__main__`` objects cannot cross a
    process boundary: PlacementError.
    """
    if isinstance(factory, FactoryRef):
        return factory.ref
    module = getattr(factory, "__module__", None)
    qualname = getattr(factory, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        raise _not_importable(factory)
    if module == "__main__" or "<" in qualname:
        raise _not_importable(factory)
    ref = f"{module}:{qualname}"
    try:
        same = load_factory(ref) is factory
    except PlacementError:
        same = False
    if not same:
        raise _not_importable(factory)
    return ref


def _not_importable(factory: object) -> PlacementError:
    return PlacementError(
        f"the warm runtime runs the harness in another process and needs an importable "
        f"factory; {factory!r} has no 'module:attr' name",
        hint="register a module-level factory, or pass FactoryRef('module:attr')",
    )


def new_snapshot_id() -> str:
    """A fresh warm snapshot id: 16 lowercase hex digits."""
    return secrets.token_hex(8)


def warm_ref(snapshot_id: str) -> SnapshotRef:
    """The journal's ``SnapshotRef`` for warm snapshot ``snapshot_id``."""
    return SnapshotRef(local=WARM_PREFIX + snapshot_id, memory=True, sealed=False)


def snapshot_id(ref: SnapshotRef) -> str | None:
    """The warm snapshot id inside ``ref``, or None if ``ref`` is not a warm snapshot."""
    match = _SNAPSHOT.fullmatch(ref.local)
    if match is None or not ref.memory:
        return None
    return match.group(1)

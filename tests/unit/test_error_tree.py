"""The map of the exception tree in ``agentsessions.errors``' docstring is the tree itself.

Each line names a class, its exit code, its gRPC status and the module that defines it, drawn
under its parent: a class added, moved or renumbered without its line fails here, so the map
a newcomer reads first cannot drift from the code.
"""

from __future__ import annotations

import re

import agentsessions.errors as errors
from agentsessions.errors import AgentSessionsError

LINE = re.compile(r"^    ((?:[| ]   )*)(\+-- )?(\w+Error) +(\d+)  (\w+) +(\w+)$")


def _drawn() -> dict[str, tuple[str | None, int, str, str]]:
    """Class name -> (parent drawn above it, exit code, gRPC status, module), from the doc."""
    out: dict[str, tuple[str | None, int, str, str]] = {}
    above: list[str] = []  # the last class drawn at each depth
    for line in (errors.__doc__ or "").splitlines():
        found = LINE.match(line)
        if not found:
            continue
        bars, branch, name, code, status, module = found.groups()
        depth = len(bars) // 4 + (1 if branch else 0)
        del above[depth:]
        out[name] = (above[-1] if above else None, int(code), status, module)
        above.append(name)
    return out


def _classes() -> dict[str, type[AgentSessionsError]]:
    found = {AgentSessionsError.__name__: AgentSessionsError}
    todo = [AgentSessionsError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("agentsessions.errors"):
                found[sub.__name__] = sub
                todo.append(sub)
    return found


def test_every_class_is_drawn_under_its_parent_with_its_codes_and_module() -> None:
    drawn = _drawn()
    classes = _classes()
    assert sorted(drawn) == sorted(classes)
    for name, cls in classes.items():
        parent = cls.__base__.__name__ if cls is not AgentSessionsError else None
        module = cls.__module__.rsplit(".", 1)[1]
        assert drawn[name] == (parent, cls.exit_code, cls.grpc_code, module), name


def test_every_class_is_importable_from_the_package() -> None:
    for name, cls in _classes().items():
        assert getattr(errors, name) is cls
        assert name in errors.__all__

"""The parsing of option values several commands share, without typer (so that a command
:mod:`.fast` runs imports none): ids and names checked before the file system is touched,
``KEY=VALUE`` lists before any engine starts. :mod:`.options` re-exports them beside the
options themselves.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentsessions.errors import InvalidArgumentError


def session_uid(value: str) -> str:
    """A validated session uid (before any file is touched)."""
    from agentsessions.v1.ids import check_uid

    return check_uid(value)


def project_name(project: str) -> str:
    """A validated project name (before any file is touched)."""
    from agentsessions.v1.ids import check_project

    return check_project(project)


def parse_pairs(values: Sequence[str], flag: str) -> dict[str, str]:
    """``["k=v", ...]`` as a dict; a missing ``=``, an empty key or a repeated key is an error."""
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidArgumentError(
                f"invalid {flag} {item!r}: expected KEY=VALUE", hint=f"for example {flag} team=ml"
            )
        if key in out:
            raise InvalidArgumentError(f"{flag} {key!r} given twice")
        if not key.isprintable() or not value.isprintable():
            raise InvalidArgumentError(f"invalid {flag} {item!r}: control characters")
        out[key] = value
    return out

"""Reading a session directory's ``session.json``: parsed, checked, or refused by name.

The file store relies on ``session.json`` for the session's identity (its ``uid`` must be the
directory's name), its project and creation time (the listing index is rebuilt from them) and,
for a forked child, where its prefix lives (``parent_uid``, ``fork_seq``). A file that is not
strict JSON, not an object, lacks one of those, or holds a value of the wrong type is damaged
store data: :class:`~agentsessions.errors.MetadataCorruptError` (exit 8) naming the session
and the file, never a bare parser message and never a guess.

Invariants: this module only reads; the same checks back ``get``, ``log``, writers, ``list``
rows and ``verify`` (of a uid or of a directory anywhere on disk).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentsessions.errors import AgentSessionsError, MetadataCorruptError
from agentsessions.journal.format import canonical
from agentsessions.journal.stores.store import SessionMeta, check_project, check_uid

META_NAME = "session.json"

_TEXT_KEYS = ("name", "harness", "model")
_PAIR_KEYS = ("labels", "annotations")
_OBJECT_KEYS = ("origin", "identity")


def read_meta(sdir: Path) -> SessionMeta:
    """The checked metadata of the session directory ``sdir`` (its name is the uid).

    Raises MetadataCorruptError naming the session and the file when the file cannot be
    read or does not hold what the store relies on.
    """
    path = sdir / META_NAME
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise damaged(sdir, path, f"cannot be read ({exc.strerror or exc})") from exc
    try:
        obj = canonical.loads(raw)
    except AgentSessionsError as exc:  # canonical raises FormatError for any non-JSON
        why = exc.message.removeprefix("invalid JSON: ")
        raise damaged(sdir, path, f"is not valid JSON ({why})") from exc
    problem = meta_problem(obj, sdir.name)
    if problem:
        raise damaged(sdir, path, problem)
    return SessionMeta.from_json(obj)


def meta_problem(obj: Any, dir_name: str) -> str:
    """Why ``obj`` (decoded ``session.json`` of directory ``dir_name``) is not usable
    metadata, or "" when it is. Unknown keys are allowed: the file may grow."""
    if not isinstance(obj, Mapping):
        return f"is not a JSON object (found {type(obj).__name__})"
    uid = obj.get("uid")
    if not isinstance(uid, str):
        return "has no string 'uid'"
    if uid != dir_name:
        return f"names uid {uid!r}, but its directory is {dir_name!r}"
    problems = (
        _project_problem(obj.get("project")),
        _int_problem(obj, "create_time_ns", required=True),
        _int_problem(obj, "fork_seq", required=False),
        _parent_problem(obj.get("parent_uid", "")),
        *(_type_problem(obj, key, str, "a string") for key in _TEXT_KEYS),
        *(_pairs_problem(obj, key) for key in _PAIR_KEYS),
        *(_object_problem(obj, key) for key in _OBJECT_KEYS),
    )
    return next((p for p in problems if p), "")


def damaged(sdir: Path, path: Path, problem: str) -> MetadataCorruptError:
    """The error for a damaged metadata file of the session in ``sdir``."""
    return MetadataCorruptError(
        f"session {sdir.name}: damaged metadata: {path} {problem}",
        hint="restore the file from a backup or an export; 'agentsessions verify --all' "
        "lists every damaged session",
        session=sdir.name,
        path=str(path),
        problem=f"{path.name} {problem}",
    )


def _project_problem(value: Any) -> str:
    if not isinstance(value, str):
        return "has no string 'project'"
    try:
        check_project(value)
    except AgentSessionsError:
        return f"has an invalid 'project' {value!r}"
    return ""


def _int_problem(obj: Mapping[str, Any], key: str, *, required: bool) -> str:
    if key not in obj and not required:
        return ""
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return f"has no non-negative integer {key!r}"
    return ""


def _parent_problem(value: Any) -> str:
    if value in ("", None):
        return ""
    try:
        check_uid(value)
    except AgentSessionsError:
        return f"has an invalid 'parent_uid' {value!r}"
    return ""


def _type_problem(obj: Mapping[str, Any], key: str, kind: type, what: str) -> str:
    if key in obj and obj[key] is not None and not isinstance(obj[key], kind):
        return f"has a {key!r} that is not {what}"
    return ""


def _pairs_problem(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        return f"has a {key!r} that is not an object of strings"
    return ""


def _object_problem(obj: Mapping[str, Any], key: str) -> str:
    return _type_problem(obj, key, Mapping, "an object")

"""What a session id and a project name look like: the rule every layer checks against.

(Vocabulary: the journal stores sessions under these names, the engine and the front ends
refuse a malformed one before any file is touched.)

A session id is ``sess-`` and 24 lowercase hex digits, as the Go reference writes it; a
project name is 1-128 characters with no path separator or control character, so it can
name a directory. A bad one is InvalidArgumentError (exit 2), quoting what was given.
"""

from __future__ import annotations

import re

from agentsessions.errors import InvalidArgumentError

DEFAULT_PROJECT = "default"
"""The project of a session whose creator named none."""

_UID = re.compile(r"sess-[0-9a-f]{24}")
_PROJECT_BAD = re.compile(r"[/\\\x00-\x1f\x7f]")


def check_uid(uid: str) -> str:
    """Return ``uid`` if it is a well-formed session id, else raise InvalidArgumentError."""
    if not isinstance(uid, str) or not _UID.fullmatch(uid):
        raise InvalidArgumentError(
            f"invalid session id {uid!r}: expected 'sess-' followed by 24 lowercase hex digits",
            hint="agentsessions list",
        )
    return uid


def check_project(project: str) -> str:
    """Return ``project`` if it is a usable project name, else raise InvalidArgumentError."""
    if not project or len(project) > 128 or project in (".", "..") or _PROJECT_BAD.search(project):
        raise InvalidArgumentError(
            f"invalid project name {project!r}: 1-128 characters, "
            "no path separators or control characters"
        )
    return project

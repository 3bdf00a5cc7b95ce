"""A workload that crossed the wire, and what the scope lets a caller make of it.

A workload arrives as TOML text (``CreateSessionRequest.tools``, ``ExecRequest.tools``);
the engine loads a workload from a file, so the service writes the text to a file of its
own (:class:`workload_file`) and hands the engine a :class:`WireWorkload`: a path that
carries the text it holds, so the scope (:mod:`.scoped`) can tell the service's file from
any other path and never reads a file a caller chose.

:func:`caller_tools` is the scope's rule (docs/SECURITY.md, "a caller selects, the operator
defines"): the operator (a listener without auth, ``projects=None``) keeps full power, its
workload is loaded as sent (checked first, so that an error names it as sent, not by the
service's file); a token holder's workload is made into the effective one by the
operator's offered tools (``serve --tools FILE``, :mod:`agentsessions.tools.offered`) and
the file rewritten with it before the engine reads it, so what the engine validates and
records is the merged text. Without offered tools a token holder's workload is
PERMISSION_DENIED, as is any path that is not the service's file.
"""

from __future__ import annotations

import os
import tempfile
from os import PathLike
from pathlib import Path

from agentsessions.errors import PermissionDeniedError
from agentsessions.sessions.tokens import Principal
from agentsessions.tools.offered import CALLER, OfferedTools
from agentsessions.tools.workload import parse_workload


class WireWorkload(PathLike[str]):
    """The service's file holding a workload's text as it crossed the wire."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text

    def __fspath__(self) -> str:
        return self.path

    def rewrite(self, text: str) -> WireWorkload:
        """The file holding ``text`` now (the effective workload), in place."""
        Path(self.path).write_text(text, encoding="utf-8")
        self.text = text
        return self


class workload_file:
    """A workload's TOML text as a file the engine can load (None when there is none)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> WireWorkload | None:
        if not self.text:
            return None
        self._dir = tempfile.TemporaryDirectory(prefix="agentsessions-workload-")
        path = os.path.join(self._dir.name, "tools.toml")
        Path(path).write_text(self.text, encoding="utf-8")
        return WireWorkload(path, self.text)

    def __exit__(self, *exc: object) -> None:
        if self._dir is not None:
            self._dir.cleanup()


def caller_tools(
    principal: Principal, offered: OfferedTools | None, tools: str | PathLike[str] | None
) -> str | PathLike[str] | None:
    """The workload the engine gets for ``principal``'s ``tools`` (module docstring)."""
    if tools is None:
        return None
    if principal.projects is None:
        if isinstance(tools, WireWorkload):  # an error names it as sent, not by our file
            parse_workload(tools.text, CALLER)
        return tools
    if not isinstance(tools, WireWorkload):
        raise PermissionDeniedError(
            "a workload file on the server's disk cannot be named over the wire",
            hint="send the workload's text (agentsessions --server ADDR exec --tools FILE)",
        )
    if offered is None:
        raise PermissionDeniedError(
            "this server offers no tools: a token holder's workload can only select tools "
            "the operator offers, and it offers none",
            hint="the operator offers tools with: agentsessions serve --tools FILE",
        )
    return tools.rewrite(offered.effective(tools.text))

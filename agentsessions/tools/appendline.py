"""The built-in ``append_line`` executor: one durable line per call, an effect anyone counts.

``args["line"]`` (a string without a newline) and a newline are appended to the file named
by ``config["path"]`` (created if missing) and fsync'd before the call returns, through the
journal's durable primitives (the only module that syncs). It keeps no dedup state of its
own: the host's receipts make each key's line land at most once.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agentsessions.controller.spi import ToolOutcome, ToolRequest
from agentsessions.journal.format.durable import DEFAULT_FS, FileSystem

from .configschema import ConfigKey, ConfigSchema


class AppendLine:
    """Appends ``args["line"]`` to ``config["path"]`` durably."""

    idempotent = False
    config_schema = ConfigSchema({"path": ConfigKey("string", required=True, doc="the file")})
    DESCRIPTION = "Append one line of text to the log file."
    PARAMETERS: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "line": {"type": "string", "description": "The line to append, without a newline."}
        },
        "required": ["line"],
        "additionalProperties": False,
    }
    """What a model is offered when the workload gives no description or parameters."""

    def __init__(self, fs: FileSystem = DEFAULT_FS) -> None:
        self.fs = fs

    def call(self, request: ToolRequest) -> ToolOutcome:
        """Append the line; a missing path or a bad line is an error outcome, no effect."""
        path = request.config.get("path")
        if not isinstance(path, str) or not path:
            return ToolOutcome(error="append_line needs config.path (the file to append to)")
        line = request.args.get("line")
        if not isinstance(line, str):
            return ToolOutcome(error="append_line needs a string argument 'line'")
        if "\n" in line or "\r" in line:
            return ToolOutcome(error="append_line appends one line: 'line' has a line break")
        data = (line + "\n").encode("utf-8")
        self.fs.append_durable(path, data)
        return ToolOutcome(output={"path": path, "bytes": len(data)})

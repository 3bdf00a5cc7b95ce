"""A workload file as the client sends it: its text (the server reads no client path)."""

from __future__ import annotations

import os
from os import PathLike
from pathlib import Path

from agentsessions.errors import WorkloadError


def tools_text(tools: str | PathLike[str] | None) -> str:
    """The workload file's text, checked here to be TOML (naming the file); the server
    validates the rest, against its own executors: a token holder's workload selects the
    tools the server offers (``serve --tools``), which this side cannot know."""
    if tools is None or tools == "":
        return ""
    import tomllib

    path = os.fspath(tools)
    try:
        text = Path(path).read_text(encoding="utf-8")
        tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(f"workload {path}: cannot read it: {exc}", path=path) from None
    except tomllib.TOMLDecodeError as exc:
        raise WorkloadError(f"workload {path}: not valid TOML: {exc}", path=path) from None
    return text

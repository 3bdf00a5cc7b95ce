"""The guide's exit-code table (docs/reference/exit-codes.md) lists every exit status the
CLI can end with: each error class's code, the usage and unexpected-error codes, and 130
(interrupted)."""

from __future__ import annotations

import re
from pathlib import Path

import agentsessions.errors as errors
from agentsessions.cli.app import EXIT_INTERRUPTED

TABLE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "exit-codes.md"


def _codes(cls: type[errors.AgentSessionsError]) -> set[int]:
    found = {cls.exit_code}
    for sub in cls.__subclasses__():
        found |= _codes(sub)
    return found


def test_the_guides_table_lists_every_exit_status() -> None:
    text = TABLE.read_text(encoding="utf-8").split("# Exit codes", 1)[1].split("\n## ", 1)[0]
    listed = {int(n) for n in re.findall(r"^\| (\d+) \|", text, re.MULTILINE)}
    statuses = {0, 1, 2, EXIT_INTERRUPTED} | {
        code for code in _codes(errors.AgentSessionsError) if code
    }
    assert listed == statuses

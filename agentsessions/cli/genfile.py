"""Writing a generated module of the CLI's (:mod:`.helpgen`, :mod:`.parsegen`): the one
rule both follow, so ``--check`` means the same for each."""

from __future__ import annotations

import sys
from pathlib import Path


def rewrite(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` when it differs; with ``--check`` on the command line,
    write nothing and exit 1 if it differs (0 if it is current)."""
    current = target.read_text(encoding="utf-8") if target.exists() else ""
    if "--check" in sys.argv[1:]:
        raise SystemExit(0 if current == text else 1)
    if current != text:
        target.write_text(text, encoding="utf-8")

"""Read back what ``agentsessions view`` wrote: the page's JSON blocks, as its script does.

Shared by the view tests (CLI, server, browser); a module of its own so that no test
directory's conftest shadows it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_BLOCK = re.compile(rb'<script type="application/json" id="([a-z0-9]+)"[^>]*>(.*?)</script>', re.S)

HOSTILE = (
    '</script><script>alert("x")</script><img src=x onerror=alert(1)>'
    "<!-- \" ' & \u2028 \u2029 </SCRIPT > <b>bold</b>"
)
"""Text that would run or become markup if the page let it (the input of the views' tests)."""

HOSTILE_NAME = '<img src=x onerror=alert(3)>"</script>'
"""A session name (printable: names refuse control characters) that would do the same."""


def blocks(path: Path) -> dict[str, Any]:
    """Every JSON block of the page by its id (``meta``, ``c0``, ``c1``...), parsed."""
    return {m[1].decode(): json.loads(m[2]) for m in _BLOCK.finditer(path.read_bytes())}


def meta(path: Path) -> dict[str, Any]:
    """The page's ``meta`` block (session, verify, tree, stores, groups, chunks...)."""
    return dict(blocks(path)["meta"])


def rows(path: Path) -> list[list[Any]]:
    """Every record row ``[seq, content_hash, event]`` of the page's chunks, in order."""
    found = blocks(path)
    return [row for i in range(len(found) - 1) for row in found[f"c{i}"]]

"""The guide's code blocks, found and run: shared by the README's and the guide's tests.

A block is a fenced ```bash or ```python block of a page under ``docs/`` or of the README.
Every one runs in a test: most through :func:`run_block` alone (it must exit 0), a few
through tests of their own that also check what they print. ``text``, ``toml`` and other
fences are illustrations and never run.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
_BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Block:
    """One runnable block: its page (relative to the checkout), its language, its text."""

    page: str
    index: int  # among the page's runnable blocks, from 0
    lang: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.page}#{self.index}"


def pages() -> list[Path]:
    """The README and every page of the guide."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """The runnable blocks of ``page``, in order."""
    rel = page.relative_to(ROOT).as_posix()
    found = _BLOCK.findall(page.read_text())
    return [Block(rel, i, lang, code) for i, (lang, code) in enumerate(found)]


def every_block() -> list[Block]:
    """Every runnable block of the README and the guide."""
    return [b for page in pages() for b in blocks(page)]


def _short_scratch(tmp_path: Path) -> Path:
    """``tmp_path/scratch``: a link to a short directory under the system's temp dir, so a
    block's ``$(mktemp -d)/x.sock`` fits a unix socket's 107 bytes however deep pytest's
    own temp path is (pytest-of-USER/pytest-NNNN/popen-gwN/TEST_NAME/ on a busy machine)."""
    link = tmp_path / "scratch"
    if not link.exists():
        short = Path(tempfile.mkdtemp(prefix="g", dir="/tmp"))
        link.symlink_to(short, target_is_directory=True)
        atexit.register(shutil.rmtree, short, True)  # the link dies with tmp_path; this too
    return Path(os.readlink(link))


def run_block(
    block: Block, tmp_path: Path, *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``block`` as a reader would: bash with ``-euo pipefail``, or python with ``home``
    bound to a fresh directory; the checkout's code, this interpreter's ``agentsessions``
    command first on PATH, ``TMPDIR`` inside ``tmp_path`` (a block's ``mktemp -d`` home).
    Warm hosts a block leaves behind are stopped."""
    fixture = tmp_path / "agentsessions" / "data"  # the tour imports the Go journal by path
    fixture.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "agentsessions" / "data" / "go-v0.1.2-completed.json", fixture)
    scratch = _short_scratch(tmp_path)
    base = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSESSIONS_")}
    base.update(
        TMPDIR=str(scratch),
        PYTHONPATH=str(ROOT),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        **(env or {}),
    )
    if block.lang == "bash":
        argv = ["bash", "-euo", "pipefail", "-c", block.code]
    else:
        argv = [sys.executable, "-c", f"home = {str(tmp_path / 'home')!r}\n{block.code}"]
    try:
        return subprocess.run(
            argv, cwd=cwd or tmp_path, env=base, capture_output=True, text=True, timeout=300
        )
    finally:
        from agentsessions.runtimes.warm_launch import shutdown_all

        for home in [*scratch.glob("tmp.*"), tmp_path / "home"]:
            shutdown_all(home)

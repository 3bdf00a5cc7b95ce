"""The guide builds strictly: no broken link, no missing page or reference, and the CLI and
library references render from the code (mkdocs.yml; the ``docs`` extra)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from needs import need

ROOT = Path(__file__).resolve().parents[1]


def test_the_guide_builds_strictly(tmp_path: Path) -> None:
    need("mkdocs", "docs")
    need("material", "docs")
    need("mkdocstrings_handlers.python", "docs")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    assert "agentsessions exec" in cli and "--fresh-start" in cli  # generated from the commands
    library = (tmp_path / "site" / "reference" / "library" / "index.html").read_text()
    assert 'id="agentsessions.open"' in library  # rendered from the docstrings
    assert 'id="agentsessions.sessions.api.Sessions.run"' in library

"""``agentsessions view`` in a real browser (issue 23, section 3): headless Chromium loads the
pages from ``file://``, the test reads the DOM the page's script drew (``--dump-dom``) and
keeps a screenshot as an artefact.

The screenshot lands in the test's tmp dir (pytest keeps the last three runs' under
``/tmp/pytest-of-$USER``) and, when ``AGENTSESSIONS_ARTEFACTS`` names a directory, is copied
there too (a CI job can upload it). Debian's ``chromium`` is a system package: missing, the
test skips, and fails under ``CI=true`` (tests/needs.py); ``.ci/run`` installs it where it
can.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from pathlib import Path

from clirun import Cli
from needs import need_program
from test_cli_view import _flip, rich_session
from viewhtml import HOSTILE, rows

CHROMIUM = need_program("chromium", "Debian's chromium browser", "apt-get install -y chromium")


def _browse(tmp_path: Path, url: str, *args: str) -> str:
    """Run headless Chromium on ``url`` with ``args``; its stdout (the DOM with --dump-dom)."""
    profile = tmp_path / "chromium-profile"
    sandbox = ["--no-sandbox"] if os.geteuid() == 0 else []  # root cannot use its sandbox
    argv = [CHROMIUM, "--headless", "--disable-gpu", "--no-first-run", *sandbox,
            f"--user-data-dir={profile}", *args, url]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _one(pattern: str, dom: str) -> str:
    found = re.findall(pattern, dom, flags=re.S)
    assert len(found) == 1, (pattern, found)
    return str(found[0])


def test_the_pages_render_in_chromium_with_timeline_tree_and_badge(
    cli: Cli, home: Path, tmp_path: Path
) -> None:
    uid, child = rich_session(cli, tmp_path)
    broken = cli.fast("exec", "--input", "first turn", "--json").ok().json()["uid"]
    cli.fast("exec", broken, "--input", "second turn").ok()
    _flip(home, broken, b"second turn")
    cli.fast("view", "--all", "-o", "site").ok()
    site = cli.cwd / "site"
    page = site / f"{uid}.html"
    decided = next(r[0] for r in rows(page) if r[2]["kind"] == "EVENT_APPROVAL_RESULT")

    dom = _browse(tmp_path, f"{page.as_uri()}#seq-{decided}", "--dump-dom")
    assert "chain verified" in _one(r'<span class="badge ok">(.*?)</span>', dom)
    assert int(_one(r'data-first-screen-ms="([0-9.]+)"', dom).split(".")[0]) >= 0
    # the timeline: one execution row, opened at the approval, with the record drawn
    assert _one(r'<details class="group state-completed"[^>]*>(.*?)</summary>', dom).count(
        "approval"
    )
    record = _one(rf'<details class="rec kind-approval_result target" id="seq-{decided}"'
                  r' open="">\s*<summary>(.*?)</summary>', dom)  # fmt: skip
    assert "approved by alice" in record
    # the fork tree: this session, and its child linked to its page with the fork point
    tree = _one(r'<section class="panel" id="forks">(.*?)</section>', dom)
    assert f'<li class="node current" data-uid="{uid}">' in tree
    assert f'<a href="{child}.html">child ({child})</a>' in tree
    assert '<a class="forkpoint" href="#seq-3">forked at seq 3</a>' in tree
    # hostile content is text, never markup: no element it names exists in the DOM
    assert html.escape(HOSTILE, quote=False).split("\u2028")[0] in dom
    for tag in ("<img", "<b>", "<!--"):
        assert tag not in dom, tag
    assert dom.count("<script") == dom.count("</script>")

    bad = _browse(tmp_path, (site / f"{broken}.html").as_uri(), "--dump-dom")
    assert "does not verify at seq 6" in _one(
        r'<span class="badge bad" data-first-bad-seq="6">(.*?)</span>', bad
    )
    index = _browse(tmp_path, (site / "index.html").as_uri(), "--dump-dom")
    for session in (uid, child, broken):
        assert f'<a href="{session}.html">{session}</a>' in index
    assert index.count('class="badge ok"') == 2 and index.count('class="badge bad"') == 1

    shot = tmp_path / "view.png"
    opened = f"{page.as_uri()}#seq-{decided}"  # the timeline open at the approval
    _browse(tmp_path, opened, f"--screenshot={shot}", "--window-size=1280,1800")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    if os.environ.get("AGENTSESSIONS_ARTEFACTS"):
        keep = Path(os.environ["AGENTSESSIONS_ARTEFACTS"])
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, keep / "view.png")

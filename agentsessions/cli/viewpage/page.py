"""Write the HTML: a session's page, or a project's index linking one page per session.

A page is ``head | meta JSON | chunk 0 | script | chunks 1..n``: the script runs as soon as
the browser reaches it, so the first screen (metadata, verify badge, fork tree, the first
page of the timeline) is drawn while the rest of a large file is still being parsed; a
chunk asked for before it arrived is drawn once the document is complete.

Invariants: no byte of session content reaches the HTML outside a JSON script element
(:mod:`.embed`); the script draws it with ``textContent`` only. The Content-Security-Policy
allows exactly the page's own style and script (by hash) and no fetch of any kind, so the
page works from ``file://`` and cannot call out. The file is replaced atomically.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.resources
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agentsessions.cli.viewpage import embed
from agentsessions.cli.viewpage.gather import Gathered, gather, list_all
from agentsessions.cli.viewpage.records import Packer
from agentsessions.errors import AgentSessionsError

if TYPE_CHECKING:
    from agentsessions.sessions.api import Sessions
    from agentsessions.sessions.values import Session

PAGE_NAME = "{uid}.html"
INDEX_NAME = "index.html"


@dataclass(frozen=True)
class PageSummary:
    """What one page holds: its file, records, sizes and the session's verify outcome."""

    uid: str
    path: str
    records: int = 0
    bytes: int = 0
    text_bytes: int = 0  # the records as ``log --json`` prints them
    ok: bool = False
    first_bad_seq: int | None = None
    reason: str = ""
    read_error: str = ""

    def to_json(self) -> dict[str, Any]:
        """The ``view --json`` object (a contract: keys only grow)."""
        return {
            "uid": self.uid,
            "path": self.path,
            "records": self.records,
            "bytes": self.bytes,
            "journal_text_bytes": self.text_bytes,
            "verified": self.ok,
            "first_bad_seq": self.first_bad_seq,
            "reason": self.reason,
            "read_error": self.read_error,
        }


def _asset(name: str) -> str:
    """The package data file ``name`` (the page's CSS or script), checked to stay inside its
    element: an edit that put ``</script>`` or ``<!--`` in it would break every page."""
    text = importlib.resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    if any(bad in text.lower() for bad in ("</script", "</style", "<!--")):
        raise AssertionError(f"{name} must not contain </script, </style or <!--")
    return text


def _sha(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def _head(css: str, js: str) -> bytes:
    policy = (
        f"default-src 'none'; style-src 'sha256-{_sha(css)}'; script-src 'sha256-{_sha(js)}'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="agentsessions view">\n'
        f"<title>agentsessions view</title>\n<style>{css}</style></head>\n"
        '<body><div id="app"><noscript>This page draws the session with its inline script:'
        " allow JavaScript for this file.</noscript></div>\n"
    ).encode()


def _write_page(path: Path, meta: dict[str, Any], spool: IO[bytes] | None, first: bytes) -> int:
    """Write the page's bytes to ``path`` atomically; its size."""
    from agentsessions.sessions.offline import replace_atomically

    css, js = _asset("view.css"), _asset("view.js")
    size = 0

    with replace_atomically(path) as write:

        def out(piece: bytes) -> None:
            nonlocal size
            write(piece)
            size += len(piece)

        out(_head(css, js))
        out(embed.script_json("meta", embed.dumps(meta)))
        out(first)
        out(f"<script>{js}</script>\n".encode())
        if spool is not None:
            spool.seek(0)
            while piece := spool.read(1 << 20):
                out(piece)
        out(b"</body></html>\n")
    return size


def write_session_page(
    engine: Sessions,
    uid: str,
    path: Path,
    *,
    listing: Iterable[Session] | None = None,
    index: str = "",
) -> PageSummary:
    """Write session ``uid``'s page to ``path``; ``index`` is the index page's file name
    when the page is one of ``view --all``'s (a link back), ``listing`` its sessions."""
    view = gather(engine, uid, listing)
    with tempfile.TemporaryFile() as spool:
        first: list[bytes] = []

        def emit(number: int, body: bytes) -> None:
            chunk = embed.script_json(f"c{number}", body, "chunk")
            if number == 0:
                first.append(chunk)  # before the script: the first records come with it
            else:
                spool.write(chunk)

        packer = Packer(emit)
        read_error = ""
        try:
            packer.feed(engine.read(uid))
        except AgentSessionsError as exc:  # damaged, or sealed without the key: show the rest
            read_error = exc.message
        packed = packer.finish()
        meta = _session_meta(view, vars(packed), read_error, index)  # its fields, uncopied
        size = _write_page(path, meta, spool, first[0] if first else b"")
    report = view.verify
    return PageSummary(
        uid, str(path), packed.records, size, packed.text_bytes, view.ok,
        report.get("first_bad_seq"), str(report.get("reason", "")), read_error,
    )  # fmt: skip


def _session_meta(
    view: Gathered, packed: dict[str, Any], read_error: str, index: str
) -> dict[str, Any]:
    return {
        "page": "session",
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "index": index,
        "session": view.session,
        "verify": view.verify,
        "tree": view.tree,
        "stores": view.stores,
        "read_error": read_error,
        **packed,
    }


def write_index(
    engine: Sessions,
    project: str,
    directory: Path,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Path, list[PageSummary]]:
    """Write one page per listed session of ``project`` and ``index.html`` linking them
    into ``directory`` (created if missing); the index's path and each page's summary."""
    directory.mkdir(parents=True, exist_ok=True)  # an OSError: one line from the CLI
    listing = list_all(engine, project)
    pages: list[PageSummary] = []
    rows: list[dict[str, Any]] = []
    for done, s in enumerate(listing):
        row = s.to_json()
        if s.damaged:
            rows.append(row)
            continue
        path = directory / PAGE_NAME.format(uid=s.uid)
        page = write_session_page(engine, s.uid, path, listing=listing, index=INDEX_NAME)
        pages.append(page)
        rows.append({**row, "page": Path(page.path).name, "view": page.to_json()})
        if progress is not None:
            progress(done + 1, len(listing))
    meta = {
        "page": "index",
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "project": project,
        "sessions": rows,
    }
    target = directory / INDEX_NAME
    _write_page(target, meta, None, b"")
    return target, pages

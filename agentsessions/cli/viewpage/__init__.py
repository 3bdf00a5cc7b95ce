"""``agentsessions view``: a session (or a project's sessions) as one self-contained HTML page.

The page needs nothing but the file: its CSS and JavaScript are inline (package data files
``view.css`` and ``view.js``), its data is JSON in ``<script type="application/json">``
blocks, and a Content-Security-Policy of hashes lets only those two run and forbids every
fetch. :mod:`.gather` reads a session through the :class:`~agentsessions.sessions.api.Sessions`
API only (so ``--server`` works the same), :mod:`.records` packs its records into paged
chunks and an execution index, :mod:`.embed` escapes JSON for a script element, and
:mod:`.page` writes the HTML.

``view --all`` writes an index that *links* one page per session rather than embedding
them: each page then keeps its own bounds (twice its journal's text at most, a first screen
that does not wait for the rest), the fork tree's links work between the pages, and the
index stays a small table however large the project's sessions grow.
"""

from __future__ import annotations

from agentsessions.cli.viewpage.page import PageSummary, write_index, write_session_page

__all__ = ["PageSummary", "write_index", "write_session_page"]

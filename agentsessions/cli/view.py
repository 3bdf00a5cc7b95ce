"""The ``view`` command: a session (or a project's sessions) as self-contained HTML.

Parses, reads through :func:`~agentsessions.cli.app.open_engine` (the local engine, or the
``--server`` client: the page is the same) and hands the writing to
:mod:`agentsessions.cli.viewpage`. A session that does not verify still gets its page (that
is when one wants to look): the page and a warning line say where the chain breaks.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentsessions.cli.context import PROG, CliState, command_state, open_engine
from agentsessions.cli.options import JsonOpt, project_name, session_uid
from agentsessions.cli.root import typer_app as app
from agentsessions.errors import InvalidArgumentError

if TYPE_CHECKING:
    from agentsessions.cli.viewpage import PageSummary

DEFAULT_DIR = "agentsessions-view"


@app.command(
    epilog="Examples: agentsessions view sess-0123456789abcdef01234567 -o triage.html --open | "
    "agentsessions view --all --project acme -o acme-view"
)
def view(
    ctx: typer.Context,
    session: Annotated[
        str | None, typer.Argument(metavar="[SESSION]", help="Session uid (sess-...).")
    ] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Every session of --project: an index and one page each.")
    ] = False,
    project: Annotated[
        str | None,
        typer.Option(
            "--project",
            "-p",
            help="With --all: the project whose sessions to write (default: default).",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="PATH",
            help=f"The HTML file (default SESSION.html); with --all a directory (default "
            f"{DEFAULT_DIR}). Replaced if it exists.",
        ),
    ] = None,
    open_: Annotated[
        bool, typer.Option("--open", help="Open the page in the default web browser.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Write a session as one self-contained HTML page: metadata, verify badge, timeline.

    The page shows the session's metadata and whether its chain verifies (the first bad seq
    if not), a timeline of its executions with every record (seq, kind, time, hash, the
    event; collapsible, paged), its fork tree (parent, children, fork points; each session
    links to its own page), its working state, tool stores and token usage. Everything is
    inline: no network request, it works from file://. --all writes index.html and one
    page per session of --project into a directory.
    """
    state = command_state(ctx, as_json)
    if (session is None) == (not all_):
        raise InvalidArgumentError(
            "view needs exactly one of SESSION or --all", hint=f"{PROG} view --help"
        )
    if project is not None and not all_:
        raise InvalidArgumentError("--project applies only with --all (a uid names its session)")
    opened = _write(state, session, project_name(project or "default"), output)
    if open_:
        _open(opened)


def _write(state: CliState, session: str | None, project: str, output: Path | None) -> Path:
    """Write the page of ``session`` (None: the index and pages of ``project``), report
    what was written; the file to open."""
    from agentsessions.cli import viewpage

    if session is None:
        target = output or Path(DEFAULT_DIR)
        with open_engine(state, read=True) as engine:
            index, pages = viewpage.write_index(engine, project, target)
        _report(state.json, pages, {"index": str(index)})
        return index
    uid = session_uid(session)
    path = output or Path(f"{uid}.html")
    with open_engine(state, read=True) as engine:
        page = viewpage.write_session_page(engine, uid, path)
    _report(state.json, [page], None)
    return path


def _report(as_json: bool, pages: list[PageSummary], index: dict[str, str] | None) -> None:
    from agentsessions.cli import render

    for page in pages:
        if not page.ok:
            where = f" at seq {page.first_bad_seq}" if page.first_bad_seq is not None else ""
            sys.stderr.write(
                f"{PROG}: warning: {page.uid} does not verify{where}: "
                f"{render.one_line(page.reason)} (the page shows it)\n"
            )
        if page.read_error:
            sys.stderr.write(
                f"{PROG}: warning: {page.uid}: the page holds {page.records} records: "
                f"{render.one_line(page.read_error)}\n"
            )
    if as_json:
        if index is None:
            render.write_json(pages[0].to_json())
        else:
            render.write_json({**index, "pages": [p.to_json() for p in pages]})
        return
    for page in pages:
        sys.stdout.write(f"{page.path}  {page.records} records, {page.bytes} bytes\n")
    if index is not None:
        count = len(pages)
        sys.stdout.write(f"{index['index']}  index of {count} session{'' if count == 1 else 's'}\n")


def _open(path: Path) -> None:
    """Hand the page to the default browser (``$BROWSER`` first, as :mod:`webbrowser` does)."""
    import webbrowser

    if not webbrowser.open(path.resolve().as_uri()):
        sys.stderr.write(f"{PROG}: warning: no web browser found; open {path} yourself\n")

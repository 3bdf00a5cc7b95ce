"""What ``list`` and ``get`` do once their command line is parsed, by typer (:mod:`.list`,
:mod:`.get`) or by :mod:`.fast`: the one body of each command, so the two parsers cannot
run different commands.

Imports no typer (a command :mod:`.fast` answers never loads it); see :mod:`.list` and
:mod:`.get` for the options' meaning.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from agentsessions.cli.context import PROG, CliState, open_engine

if TYPE_CHECKING:
    from agentsessions.errors import AgentSessionsError
    from agentsessions.sessions.session import SessionPage


def list_sessions(state: CliState, project: str, page_size: int, cursor: str, origin: str) -> None:
    """Print one page of ``project``'s sessions (or the one ``origin`` names) as
    ``state`` asks: a table, or JSON with ``--json``."""
    from agentsessions.cli.provenance import parse_origin
    from agentsessions.v1.ids import check_project

    check_project(project)  # before the home is opened (cli.options.project_name)
    named = parse_origin(origin)
    listed = None if named is not None else list_local(state, project, page_size, cursor)
    if listed is not None:
        page, unindexed = listed
    else:
        with open_engine(state, read=True) as engine:
            if named is not None:
                from agentsessions.sessions.session import SessionPage

                found = engine.find(origin=named, project=project)
                page = SessionPage((found,) if found is not None else (), "")
                unindexed = ()
            else:
                page = engine.list(project=project, page_size=page_size, cursor=cursor)
                # a missing catalog was rebuilt on open (a local home: a server has its own)
                unindexed = tuple(getattr(engine, "unindexed", ()))
    from agentsessions.cli import render, sessionview

    for exc in unindexed:  # no row can carry them (their project is unknown): say so
        sys.stderr.write(f"{PROG}: warning: not listed: {render.one_line(exc.message)}\n")

    if state.json:
        render.write_json(
            {"sessions": [s.to_json() for s in page.sessions], "next_cursor": page.next_cursor}
        )
    else:
        sessionview.print_page(page, project)


def list_local(
    state: CliState, project: str, page_size: int, cursor: str
) -> tuple[SessionPage, tuple[AgentSessionsError, ...]] | None:
    """A page of the local file store's sessions, read by its listing alone (no engine:
    :func:`agentsessions.sessions.listing.open_listing`), and the sessions it could not
    list; None when the engine must answer (``--server``, or a store URL)."""
    if state.server:
        return None
    from agentsessions.sessions.listing import list_page, open_listing

    listing = open_listing(
        state.home,
        store_url=state.store,
        allow_unsynced=state.allow_unsynced,
        key_file=state.key_file or None,
        must_exist=True,
    )
    if listing is None:
        return None
    with listing:
        page, _ = list_page(listing, project, page_size, cursor)
        # a missing catalog was rebuilt on open: the sessions that rebuild could not index
        return page, tuple(listing.unindexed)


def get_session(state: CliState, session: str) -> None:
    """Print session ``session``'s metadata, projections, memory and token usage as
    ``state`` asks: a page, or JSON with ``--json``."""
    from agentsessions.sessions.usage import readable_usage
    from agentsessions.v1.ids import check_uid

    uid = check_uid(session)  # before the home is opened (cli.options.session_uid)
    with open_engine(state, read=True) as engine:
        info = engine.get(uid)
        usage, why = readable_usage(engine, uid)
    from agentsessions.cli import render, sessionview

    memory = info.memory
    assert memory is not None  # get always says where the memory is
    if state.json:
        totals = usage.to_json() if usage is not None else None
        render.write_json({**info.to_json(), "memory": memory.to_json(), "usage": totals})
    else:
        sessionview.print_session(info, memory.text, usage.text() if usage is not None else why)

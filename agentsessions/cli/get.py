"""``get``: one session's metadata, projections, memory and token usage (its options; what
it does: :mod:`.reading`, which :mod:`.fast` runs too)."""

from __future__ import annotations

import typer

from agentsessions.cli.context import command_state
from agentsessions.cli.options import JsonOpt, SessionArg
from agentsessions.cli.reading import get_session
from agentsessions.cli.root import typer_app as app


@app.command(epilog="Example: agentsessions get sess-0123456789abcdef01234567")
def get(ctx: typer.Context, session: SessionArg, as_json: JsonOpt = False) -> None:
    """Show a session's metadata and its projections (last seq, compute and exec state).

    Also where the harness's memory lives and until when (memory: a warm host and its idle
    timeout, a frozen snapshot, none for a stateless harness, or gone), and the session's
    token usage: the totals of its USAGE records (input, output and reasoning tokens, and
    how many model calls reported usage), read from the journal when get asks. Records get
    cannot read (encrypted without the key, damaged) leave the usage unknown, not the
    metadata: ``usage`` is then null in --json.
    """
    get_session(command_state(ctx, as_json), session)

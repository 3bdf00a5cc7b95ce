"""``demo``: the main job end to end, offline, narrated (the narrative: :mod:`.demorun`)."""

from __future__ import annotations

import typer

from agentsessions.cli import serveropts as so
from agentsessions.cli.context import command_state, name_process
from agentsessions.cli.options import JsonOpt
from agentsessions.cli.root import typer_app as app


@app.command(epilog="Example: agentsessions demo   (or: agentsessions --home ./demo-home demo)")
def demo(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Run the main job end to end, offline, and narrate each step.

    A 3-turn chat session on the offline scripted model; its records; a turn killed with
    SIGKILL while its model call is in flight, then resumed; a replay with zero model calls;
    a fork into two children that each run a turn; suspend and resume; the shipped Go
    reference journal imported and replayed; every chain verified. Uses a fresh temporary
    home unless --home or AGENTSESSIONS_HOME is given; exits non-zero if any step fails.
    """
    from agentsessions.cli.demorun import run_demo

    state = command_state(ctx, as_json)
    so.require_local(state.server, "demo")
    name_process(state)
    run_demo(state.home, as_json=state.json)

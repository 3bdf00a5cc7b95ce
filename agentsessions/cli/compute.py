"""The ``compute`` commands: see and end the warm host processes that keep harness memory.

A harness whose memory is its state (counter) runs in a detached warm host that outlives
the command which started it, until its idle timeout (``AGENTSESSIONS_WARM_IDLE_SECONDS``,
default one hour). ``compute list`` shows every such process of the home, ``compute stop``
ends a session's (or all of them). The logic lives in
:mod:`agentsessions.runtimes.compute`; this module parses and renders only.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from agentsessions.cli.context import PROG, command_state, open_local_engine
from agentsessions.cli.helpview import HelpGroup, reflow
from agentsessions.cli.options import JsonOpt, session_uid
from agentsessions.cli.root import typer_app as app
from agentsessions.errors import InvalidArgumentError

if TYPE_CHECKING:
    from agentsessions.runtimes.compute import HostInfo

compute_app = typer.Typer(
    name="compute",
    cls=HelpGroup,
    help="List and stop the warm host processes that keep harness memory (e.g. counter's). "
    "Each exits by itself after its idle timeout (AGENTSESSIONS_WARM_IDLE_SECONDS, "
    "default 3600 s, counted from its last use).",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(compute_app, name="compute")


@compute_app.command(
    name="list",
    epilog="Examples: agentsessions compute list | "
    "agentsessions compute list sess-0123456789abcdef01234567 --json",
)
def list_(
    ctx: typer.Context,
    session: Annotated[
        str | None,
        typer.Argument(metavar="[SESSION]", help="Only this session's compute."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List every live warm host and frozen snapshot process under this home.

    One row each: session, harness, pid, kind (live host or snapshot), when it started and
    when it exits unless used (its idle timeout; "busy" while it serves a run).
    """
    state = command_state(ctx, as_json)
    uid = session_uid(session) if session is not None else None
    with open_local_engine(state, "compute list") as engine:
        hosts = engine.compute(uid)
    if state.json:
        from agentsessions.cli.render import write_json

        write_json({"compute": [host.to_json() for host in hosts]})
        return
    if not hosts:
        which = f"session {uid}" if uid is not None else "this home"
        sys.stdout.write(f"no warm compute runs for {which}\n")
        return
    _print_hosts(hosts)


def _print_hosts(hosts: list[HostInfo]) -> None:
    from rich.text import Text

    from agentsessions.cli import render
    from agentsessions.runtimes.compute import KIND_NAMES, iso_time

    table = render.plain_table()
    for column in ("session", "harness", "pid", "kind", "started", "idle until"):
        table.add_column(column, no_wrap=column != "harness")
    for host in hosts:
        kind = KIND_NAMES.get(host.kind, host.kind)
        if host.snapshot:
            kind += f" {host.snapshot}"
        table.add_row(
            Text(host.session or "-"),
            Text(host.harness or "-"),
            str(host.pid),
            Text(kind),
            iso_time(host.started) or "-",
            host.idle_text(),
        )
    render.emit(render.stdout_console(), table)


@compute_app.command(
    epilog="Examples: agentsessions compute stop sess-0123456789abcdef01234567 | "
    "agentsessions compute stop --all"
)
def stop(
    ctx: typer.Context,
    session: Annotated[
        str | None, typer.Argument(metavar="[SESSION]", help="The session whose compute ends.")
    ] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="End every warm host and snapshot of this home.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """End a session's warm host and snapshots, or every one with --all; idempotent.

    The journal is not touched. A harness whose memory was stopped continues only with
    `exec SESSION --fresh-start` (recorded in the journal).
    """
    from agentsessions.runtimes.compute import KIND_NAMES

    state = command_state(ctx, as_json)
    if (session is None) == (not all_):
        raise InvalidArgumentError(
            "compute stop needs exactly one of SESSION or --all",
            hint=f"{PROG} compute stop --help",
        )
    uid = session_uid(session) if session is not None else None
    with open_local_engine(state, "compute stop") as engine:
        stopped = engine.stop_compute(uid)
    if state.json:
        from agentsessions.cli.render import write_json

        write_json({"stopped": [host.to_json() for host in stopped]})
        return
    if not stopped:
        which = f"session {uid} has" if uid is not None else "this home has"
        sys.stdout.write(f"{which} no warm compute running (nothing to stop)\n")
        return
    for host in stopped:
        what = KIND_NAMES.get(host.kind, host.kind) + (f" {host.snapshot}" if host.snapshot else "")
        sys.stdout.write(f"stopped {what} pid {host.pid} of {host.session or '-'}\n")


for _command in compute_app.registered_commands:
    if _command.help is None and _command.callback is not None and _command.callback.__doc__:
        _command.help = reflow(_command.callback.__doc__)

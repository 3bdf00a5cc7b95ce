"""The ``harness`` group: serve a harness as its own process, and the home's registrations.

``agentsessions harness serve NAME --listen ADDRESS`` runs any registered Python harness
(echo, counter, chat, memory, or one from an entry point) behind the Harness service; it
prints ``harness NAME listening on ADDRESS`` once it accepts streams, and stops gracefully
on SIGINT or SIGTERM. ``harness register NAME --address ADDRESS`` records, in the home, that
NAME is a harness served at ADDRESS; from then on ``exec --harness NAME`` runs its turns
over the wire (the remote runtime), for sessions of the registration's project
(``--project``, default ``default``: names are per project). ``harness list`` and ``harness
retire NAME`` are the rest of the HarnessRegistry, as the service has it. With ``--server``
the three ask the server's HarnessRegistry instead of the home (what the token's projects
hold; an address off the server's machine needs an admin token). gRPC is imported only by
``serve`` and ``--server``.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from agentsessions.cli.context import CliState, command_state, open_engine
from agentsessions.cli.helpview import HelpGroup
from agentsessions.cli.options import JsonOpt
from agentsessions.cli.root import typer_app as app

harness_app = typer.Typer(
    name="harness",
    cls=HelpGroup,
    help="Serve a harness as its own process (Harness.Connect), and register harnesses "
    "served at an address so that sessions can run on them.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(harness_app, name="harness")

NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The harness's name.")]
ProjectOpt = Annotated[
    str,
    typer.Option(
        "--project",
        "-p",
        help="The project whose harnesses these are (names are per project; with --server, "
        "a token not covering it acts in its first project for default).",
    ),
]


@harness_app.command(
    name="serve",
    epilog="Example: agentsessions harness serve chat --listen unix:///tmp/chat.sock",
)
def serve(
    name: NameArg,
    listen: Annotated[
        str,
        typer.Option("--listen", metavar="ADDRESS", help="HOST:PORT or unix:///path."),
    ],
    history_sessions: Annotated[
        int,
        typer.Option(
            "--history-sessions",
            min=0,
            help="Sessions whose history the node keeps (least recently used out; 0: keep "
            "none, every Start carries the whole history).",
        ),
    ] = 256,
    history_mb: Annotated[
        int,
        typer.Option("--history-mb", min=1, help="MiB of kept history events, at most."),
    ] = 64,
) -> None:
    """Serve the harness NAME over the Harness service until SIGINT or SIGTERM.

    Each Connect stream is one execution: the host sends Start, the harness's model calls
    and host tools come back to the host, which records them. The node keeps the history
    each session was sent, so a session's next Start carries only what is new (bounded by
    --history-sessions and --history-mb; an evicted session's next Start is whole). Prints
    the address it listens on (a port 0 is replaced by the one it got).
    """
    from agentsessions.sessions.wiring import HARNESSES
    from agentsessions.wire.harnessnode import HarnessServer
    from agentsessions.wire.historysync import NodeHistories

    factory = HARNESSES.factory(name)  # an unknown name: exit 2, listing the known ones
    factory().describe()  # a harness that cannot describe itself fails here, not per stream
    kept = NodeHistories(history_sessions, history_mb << 20) if history_sessions else None
    server = HarnessServer(factory, listen, kept=kept, keep_history=kept is not None)
    print(f"harness {name} listening on {server.address}", flush=True)
    server.serve_forever()


@harness_app.command(
    name="register",
    epilog="Example: agentsessions harness register mychat --address unix:///tmp/chat.sock",
)
def register(
    ctx: typer.Context,
    name: NameArg,
    address: Annotated[
        str,
        typer.Option("--address", metavar="ADDRESS", help="HOST:PORT or unix:///path."),
    ],
    descriptor_id: Annotated[
        str, typer.Option("--descriptor-id", help="The id the harness must describe itself as.")
    ] = "",
    project: ProjectOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Record in the home that NAME is a harness served at ADDRESS (STATELESS_REPLAY).

    Registering the same spec again changes nothing; a name keeps its spec, even retired.
    Only sessions of the project run on it. A built-in name (echo, counter, chat, memory)
    or one `serve --harness` gives cannot be registered. Over --server, an ADDRESS off the
    server's machine (not loopback, not unix://) needs a token made with --admin.
    """
    state = command_state(ctx, as_json)
    caps = {"resumability": "RESUMABILITY_STATELESS_REPLAY"}
    spec: dict[str, Any] = {"remote": {"address": address}, "capabilities": caps}
    if descriptor_id:
        spec["descriptor_id"] = descriptor_id
    with open_engine(state) as engine:
        reg, outcome = _book(state, engine).register(name, spec, project)
    _show(state.json, {"harness": reg, "outcome": outcome},
          f"{outcome.removeprefix('REGISTER_OUTCOME_').lower()}: {name} at {address}")  # fmt: skip


@harness_app.command(name="list", epilog="Example: agentsessions harness list --all")
def list_(
    ctx: typer.Context,
    include_retired: Annotated[bool, typer.Option("--all", help="Retired ones too.")] = False,
    project: ProjectOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """List the harnesses a project may use: static (built in) and its registered ones, in
    name order."""
    state = command_state(ctx, as_json)
    with open_engine(state) as engine:
        book, regs, token = _book(state, engine), [], "start"
        while token:
            after = "" if token == "start" else token
            page, token = book.list(500, after, include_retired, project)
            regs.extend(page)
    if state.json:
        _show(True, {"harnesses": regs}, "")
    else:
        _print_table(regs)


@harness_app.command(name="retire", epilog="Example: agentsessions harness retire mychat")
def retire(
    ctx: typer.Context,
    name: NameArg,
    reason: Annotated[str, typer.Option("--reason", help="Why (only the first is kept).")] = "",
    project: ProjectOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Retire the registered harness NAME of the project: new turns can no longer run on it."""
    state = command_state(ctx, as_json)
    with open_engine(state) as engine:
        reg = _book(state, engine).retire(name, reason, project)
    _show(state.json, {"harness": reg}, f"retired: {name}")


def _book(state: CliState, engine: Any) -> Any:
    """The registry the command acts on: the server's with --server, else the home's."""
    if state.server:
        from agentsessions.client.harnesses import RemoteHarnessBook

        return RemoteHarnessBook(engine)
    from agentsessions.sessions.harnessbook import HarnessBook, records_for

    return HarnessBook(records_for(engine.store))


def _print_table(regs: list[dict[str, Any]]) -> None:
    """The registrations as a table with a header, as every other listing has."""
    from rich.text import Text

    from agentsessions.cli import render

    table = render.plain_table()
    for column in ("name", "source", "state", "address"):
        table.add_column(column, no_wrap=True)
    for reg in regs:
        table.add_row(*(Text(render.one_line(cell)) for cell in _cells(reg)))
    render.emit(render.stdout_console(), table)


def _cells(reg: dict[str, Any]) -> tuple[str, str, str, str]:
    name = reg["metadata"]["name"]
    source = reg["source"].removeprefix("HARNESS_SOURCE_").lower()
    state = reg["state"].removeprefix("HARNESS_STATE_").lower()
    where = reg["spec"].get("remote", {}).get("address", "in process")
    return name, source, state, where


def _show(as_json: bool, body: dict[str, Any], text: str) -> None:
    from agentsessions.cli import render

    if as_json:
        render.write_json(body)
    else:
        print(render.one_line(text) if "\n" not in text else text)

"""The ``token`` commands: bearer tokens for ``agentsessions serve``, scoped to projects.

``token create --project P`` prints a new token once (stdout: the token alone, so
``TOKEN=$(agentsessions token create -p acme)`` works; stderr: its id and what to keep);
the home keeps only its SHA-256 (``tokens.json``, mode 0600). ``token list`` shows ids,
names, projects and state, never a secret; ``token revoke ID`` ends one (a running server
sees it on the next call). The logic lives in :mod:`agentsessions.sessions.tokens`, which
imports no grpc: these commands work without the ``grpc`` extra.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from agentsessions.cli.context import command_state
from agentsessions.cli.helpview import HelpGroup
from agentsessions.cli.options import JsonOpt
from agentsessions.cli.root import typer_app as app

if TYPE_CHECKING:
    from agentsessions.cli.context import CliState
    from agentsessions.sessions.tokens import TokenInfo, TokenStore

token_app = typer.Typer(
    name="token",
    cls=HelpGroup,
    help="Create, list and revoke the bearer tokens `agentsessions serve` accepts. A token "
    "acts in its projects only; the home keeps its hash, never its text.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(token_app, name="token")


def _store(state: CliState) -> TokenStore:
    from agentsessions.sessions.home import resolve_home
    from agentsessions.sessions.tokens import TokenStore

    return TokenStore(resolve_home(state.home))


ProjectsOpt = Annotated[
    list[str],
    typer.Option(
        "--project",
        "-p",
        help="A project the token acts in; repeatable (the first is "
        "where a request naming no project lands).",
    ),
]
TokenNameOpt = Annotated[
    str,
    typer.Option(
        help="Who the token stands for: recorded as the actor on approvals (default: token-ID)."
    ),
]
ExpiresOpt = Annotated[
    str,
    typer.Option(
        metavar="DURATION", help="Lifetime: 90s, 15m, 12h, 30d or 2w (default: until revoked)."
    ),
]
AdminOpt = Annotated[
    bool,
    typer.Option(
        "--admin",
        help="Let the token register a harness at an address off this machine (not "
        "loopback, not a unix socket): the server will dial it. Without it such a "
        "register is PERMISSION_DENIED.",
    ),
]
NameAuthorsOpt = Annotated[
    bool,
    typer.Option(
        "--name-authors",
        help="Let the token name who wrote each input and who made a session (a "
        "producer relaying others' words, such as a webhook): their identities are "
        "recorded. Without it the token's own identity is recorded instead.",
    ),
]


@token_app.command(
    epilog="Example: TOKEN=$(agentsessions token create --project acme --name ci --expires 30d)"
)
def create(
    ctx: typer.Context,
    project: ProjectsOpt,
    name: TokenNameOpt = "",
    expires: ExpiresOpt = "",
    admin: AdminOpt = False,
    name_authors: NameAuthorsOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Create a token and print it once; only its hash is kept.

    stdout carries the token alone (with --json: an object with "token", "id", "name",
    "projects", "admin", "name_authors", "created_ns", "expires_ns"). It cannot be shown
    again: keep it now, or revoke it and create another. Every token sees, registers and
    retires only its projects' harnesses; --admin adds the right to register one at a
    remote address. A token's inputs and the sessions it makes are recorded as its own
    identity (principal NAME, issuer agentsessions-token, subject ID) unless
    --name-authors lets it name their authors.
    """
    from agentsessions.sessions.tokens import parse_duration

    state = command_state(ctx, as_json)
    seconds = parse_duration(expires) if expires else None
    text, info = _store(state).create(
        projects=project, name=name, expires_in=seconds, admin=admin, name_authors=name_authors
    )
    _report_created(state.json, text, info)


def _report_created(as_json: bool, text: str, info: TokenInfo) -> None:
    """The new token on stdout (alone, or in its JSON object); what it is on stderr."""
    if as_json:
        from agentsessions.cli.render import write_json

        write_json({"token": text, **info.to_json()})
        return
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    flags = [
        flag for flag, on in (("admin", info.admin), ("names authors", info.name_authors)) if on
    ]
    where = ", ".join(info.projects) + (f" ({', '.join(flags)})" if flags else "")
    sys.stderr.write(
        f"created token {info.id} ({info.principal}) for {where}; it is shown only once\n"
    )


@token_app.command(name="list", epilog="Example: agentsessions token list --json")
def list_(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """List the home's tokens: id, name, projects, admin, created, expires and state.

    The state is active, expired or revoked. No secret is shown (none is kept).
    """
    import time

    from agentsessions.cli import render

    state = command_state(ctx, as_json)
    tokens = _store(state).list()
    now = time.time_ns()
    if state.json:
        render.write_json({"tokens": [t.to_json(now) for t in tokens]})
        return
    if not tokens:
        sys.stdout.write("no tokens (create one: agentsessions token create --project P)\n")
        return
    from rich.text import Text

    table = render.plain_table()
    for column in ("id", "name", "projects", "admin", "created", "expires", "state"):
        table.add_column(column, no_wrap=column in ("id", "created", "expires"))
    for t in tokens:
        table.add_row(
            t.id,
            Text(render.one_line(t.principal)),
            Text(render.one_line(", ".join(t.projects))),
            "yes" if t.admin else "no",
            render.format_time_ns(t.created_ns),
            render.format_time_ns(t.expires_ns) if t.expires_ns else "never",
            t.state(now),
        )
    render.emit(render.stdout_console(), table)


@token_app.command(epilog="Example: agentsessions token revoke 0123456789ab")
def revoke(
    ctx: typer.Context,
    token_id: Annotated[str, typer.Argument(metavar="ID", help="The token's id (token list).")],
    as_json: JsonOpt = False,
) -> None:
    """Revoke a token: a server refuses it from its next call on (UNAUTHENTICATED).

    The record stays (listed as revoked); revoking it again changes nothing. An unknown id
    exits 3.
    """
    import time

    state = command_state(ctx, as_json)
    info = _store(state).revoke(token_id)
    if state.json:
        from agentsessions.cli.render import write_json

        write_json(info.to_json(time.time_ns()))
    else:
        sys.stdout.write(f"revoked token {info.id} ({info.principal})\n")

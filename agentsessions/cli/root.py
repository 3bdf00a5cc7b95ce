"""The root command: the global options, and every failure as one line and an exit code (what
:mod:`.app` runs when :mod:`.fast` does not answer).

Each command registers itself on :data:`typer_app` from its own module, imported when that
command runs (:mod:`.commands` names the module of each); ``app`` is the same root with every
command registered, for typer's eager build and its test runner. The command line's
invariants:
- every command accepts ``--json``; JSON goes to stdout, diagnostics to stderr;
- every expected failure is an :class:`~agentsessions.errors.AgentSessionsError` (or a usage
  error from the parser) and ends as ONE line ``agentsessions: error: ...`` on stderr (plus an
  optional ``  hint: ...`` line) and the error class's stable exit code, never a traceback;
- session ids and project names are validated before the file system is touched;
- startup stays fast: rich, the store and the journal modules are imported inside commands,
  only the module of the subcommand that runs is imported and only that subcommand built
  (:func:`root_command`), and ``--help`` is drawn
  without typer's markdown-and-pygments renderer (:mod:`.helpview`);
- a veneer: each command parses, calls one :class:`~agentsessions.sessions.api.Sessions`
  method and renders; no module of ``cli/`` imports the journal or the controller.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentsessions.cli import completion, failures
from agentsessions.cli import serveropts as so
from agentsessions.cli.clickapi import ParameterSource
from agentsessions.cli.context import EXIT_INTERRUPTED as EXIT_INTERRUPTED  # cli.app's name
from agentsessions.cli.context import PROG, CliState, CommandExit, start_command
from agentsessions.cli.lazygroup import LazyGroup, lazy_group
from agentsessions.cli.storeopts import AllowUnsyncedOpt, KeyFileOpt, StoreOpt
from agentsessions.errors import AgentSessionsError

if TYPE_CHECKING:
    from agentsessions.cli.clickapi import Context as BaseContext


class AgentSessionsGroup(LazyGroup):
    """The root command: runs the parser and turns every failure into one line and an exit code.

    Built by :func:`root_command`, its subcommands are made on first use (:mod:`.lazygroup`).
    """

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command line; exit (or return, when not standalone) with the exit code."""
        from agentsessions.cli.stream import guarded

        state = extra.setdefault("obj", CliState())
        with guarded() as output:  # a closed terminal, EPIPE or ENOSPC never fails a command
            code = output.exit_code(self._run(args, prog_name or PROG, complete_var, state, extra))
        if standalone_mode:
            sys.exit(code)
        return code

    def _run(
        self,
        args: Sequence[str] | None,
        prog_name: str,
        complete_var: str | None,
        state: CliState,
        extra: dict[str, Any],
    ) -> int:
        argv = list(sys.argv[1:] if args is None else args)
        try:
            rv = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except (AgentSessionsError, ModuleNotFoundError, OSError) as exc:
            return failures.reported(exc, state)
        except CommandExit as exc:  # the command said its exit status (cli.turnview)
            return exc.code
        except typer.TyperException as exc:  # click usage errors: bad flag, missing argument
            message = exc.format_message()
            if not message:  # a group run without its command: its help was the answer
                return exc.exit_code
            as_json = state.json or "--json" in argv
            failures.report(
                message, failures.usage_hint(exc), as_json, {"error": "usage", "message": message}
            )
            return exc.exit_code
        except typer.Abort:
            failures.report("aborted", "", state.json, {"error": "aborted", "message": "aborted"})
            return 1
        return rv if isinstance(rv, int) else 0

    def parse_args(self, ctx: BaseContext, args: list[str]) -> list[str]:
        """Parse the root's options, those typed after the command too (:mod:`.globalopts`)."""
        from agentsessions.cli.globalopts import hoist

        return super().parse_args(ctx, hoist(self, ctx, args))

    def invoke(self, ctx: BaseContext) -> Any:
        """Invoke the subcommand; Ctrl-C ends with one line and exit status 130."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise typer.Exit(failures.interrupted()) from None


typer_app = typer.Typer(
    name=PROG,
    cls=AgentSessionsGroup,
    help=(
        "Durable AI-agent sessions kept as append-only, hash-chained event journals.\n\n"
        "Sessions live under --home (or $AGENTSESSIONS_HOME, else the per-user data directory)."
        " The options below but --version also work after the command."
    ),
    epilog="Start here: agentsessions demo",
    add_completion=True,  # --install-completion, --show-completion (typer.main loads it anyway)
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
completion.install()  # $SHELL where no shell is above the process


@typer_app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    home: Annotated[
        str | None,  # a str, not a Path: Path("") is "." and would hide an empty --home
        typer.Option(
            "--home",
            envvar="AGENTSESSIONS_HOME",
            metavar="DIR",
            help="Directory holding the sessions (default: $AGENTSESSIONS_HOME, "
            "else the per-user data directory).",
            show_envvar=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output for any command.")] = False,
    version: Annotated[
        bool,
        typer.Option("--version", "-V", help="Print the version (with --json, as JSON) and exit."),
    ] = False,
    server: so.ServerOpt = "",
    token: so.TokenOpt = "",
    tls_ca: so.TlsCaOpt = "",
    tls_cert: so.TlsCertOpt = "",
    tls_key: so.TlsKeyOpt = "",
    store: StoreOpt = "",
    allow_unsynced: AllowUnsyncedOpt = False,
    key_file: KeyFileOpt = "",
) -> None:
    """Durable AI-agent sessions kept as append-only, hash-chained event journals."""
    if version:  # read here, not eagerly, so --json counts wherever it stands on the line
        from agentsessions.cli.version import print_version

        print_version(as_json or ctx.ensure_object(CliState).json)
    state = ctx.ensure_object(CliState)
    typed = ctx.get_parameter_source("home") is ParameterSource.COMMANDLINE
    commands = ctx.command.list_commands(ctx)  # type: ignore[attr-defined]
    start_command(state, home, typed, commands, ctx.invoked_subcommand)
    state.server, state.token = server, token
    state.store, state.allow_unsynced, state.key_file = store, allow_unsynced, key_file
    state.tls = so.check_tls(server, tls_ca, tls_cert, tls_key)
    state.json = state.json or as_json
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help(), nl=False)
        raise typer.Exit(0)


def root_command() -> AgentSessionsGroup:
    """``app`` as typer would build it (same group, same commands in the same order), but
    with each subcommand's module imported and the subcommand built on first use
    (:func:`.lazygroup.lazy_group`).

    typer's own entry (``app(...)``) only adds an exception hook, a no-op with pretty
    exceptions off; tests that hand ``app`` to typer's CliRunner get the eager build.
    """
    return lazy_group(typer_app, AgentSessionsGroup)


def load_all() -> typer.Typer:
    """The root app with every command registered: each command module imported (in the
    order ``--help`` lists them), then their help reflowed (:func:`.helpview.reflow_help`)."""
    from agentsessions.cli.commands import load, modules
    from agentsessions.cli.helpview import reflow_help

    for module in modules():
        load(module)
    reflow_help(typer_app)
    return typer_app

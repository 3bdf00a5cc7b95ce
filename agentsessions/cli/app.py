"""The ``agentsessions`` command line: parse, call the library, render. Nothing more.

Invariants:
- every command accepts ``--json``; JSON goes to stdout, diagnostics to stderr;
- every expected failure is an :class:`~agentsessions.errors.AgentSessionsError` (or a usage
  error from the parser) and ends as ONE line ``agentsessions: error: ...`` on stderr (plus an
  optional ``  hint: ...`` line) and the error class's stable exit code, never a traceback;
- session ids and project names are validated before the file system is touched;
- startup stays fast: rich, the store and the journal modules are imported inside commands,
  only the subcommand that runs is built (:func:`root_command`) and ``--help`` is drawn
  without typer's markdown-and-pygments renderer (:mod:`.helpview`);
- a veneer: each command parses, calls one :class:`~agentsessions.sessions.api.Sessions`
  method and renders; no module of ``cli/`` imports the journal or the controller.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer._click.core import ParameterSource

from agentsessions.cli import completion, failures
from agentsessions.cli import serveropts as so
from agentsessions.cli.lazygroup import LazyGroup, lazy_group
from agentsessions.cli.storeopts import (
    AllowUnsyncedOpt,
    CiphertextOpt,
    DecryptOpt,
    KeyFileOpt,
    StoreOpt,
    export_choice,
    open_chosen,
)
from agentsessions.errors import (
    AgentSessionsError,
    InvalidArgumentError,
    LockHeldError,
    StorageError,
)

if TYPE_CHECKING:
    from typer._click.core import Context as BaseContext

    from agentsessions.sessions.api import Sessions, VerifyReport
    from agentsessions.sessions.local import LocalSessions

PROG = "agentsessions"
EXIT_INTERRUPTED = 130


@dataclass
class CliState:
    """What the app callback parsed, shared with every command through the click context."""

    home: Path | None = None
    json: bool = False
    program: str = ""
    server: str = ""  # --server / $AGENTSESSIONS_SERVER: every command goes to that daemon
    token: str = ""
    tls: tuple[str, str, str] = ("", "", "")  # --tls-ca, --tls-cert, --tls-key
    store: str = ""  # --store / $AGENTSESSIONS_STORE: "" is the file store under the home
    allow_unsynced: bool = False  # --allow-unsynced: a store server that may ack before fsync
    key_file: str = ""  # --key-file: the master key ("": the environment's, or none)


# --- error handling: agentsessions.cli.failures -------------------------------------------


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
        except AgentSessionsError as exc:
            if isinstance(exc, LockHeldError):
                exc.hint = failures.busy_hint(exc.hint, state.program)
            failures.report(exc.message, exc.hint, state.json, exc.to_dict())
            return exc.exit_code
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
        except ModuleNotFoundError as exc:  # an optional package (grpc for serve): its extra
            missing = failures.missing_extra(exc)
            if missing is None:
                raise
            failures.report(missing.message, missing.hint, state.json, missing.to_dict())
            return missing.exit_code
        except OSError as exc:
            err = failures.storage_error(exc)
            failures.report(err.message, err.hint, state.json, err.to_dict())
            return err.exit_code
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
            sys.stderr.write(f"\n{PROG}: interrupted\n")
            raise typer.Exit(EXIT_INTERRUPTED) from None


app = typer.Typer(
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

JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print JSON on stdout (a stable, documented contract).")
]
SessionArg = Annotated[str, typer.Argument(metavar="SESSION", help="Session uid (sess-...).")]
ProjectOpt = Annotated[str, typer.Option("--project", "-p", help="Project the session belongs to.")]
MODEL_SPEC_HELP = (
    "SPEC names the provider: echo, scripted[:seed=N|:file=PATH], "
    "openai:MODEL[,base_url=URL], a plugin's name, or a NAME of the operator's model "
    "catalog (serve --model NAME=SPEC, [models.NAME] in the config file); any other spec "
    "is refused (exit 2) before anything is written or sent."
)
"""The ``--model`` syntax, in the help of every command that takes the flag (models/)."""


@app.callback(invoke_without_command=True)
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
    from agentsessions.sessions.home import check_home

    state = ctx.ensure_object(CliState)
    if home is not None and ctx.get_parameter_source("home") is ParameterSource.COMMANDLINE:
        from agentsessions.cli.globalopts import check_home_word

        check_home_word(home, ctx.command.list_commands(ctx))  # type: ignore[attr-defined]
    state.home = None if home is None else check_home(home, "--home")
    state.server, state.token = server, token
    state.store, state.allow_unsynced, state.key_file = store, allow_unsynced, key_file
    state.tls = so.check_tls(server, tls_ca, tls_cert, tls_key)
    state.json = state.json or as_json
    if ctx.invoked_subcommand is not None:
        # a registered verb, never an argument: a LOCK names its holder without user content.
        # Handed to the journal when an engine opens (``name_process``), so that a
        # subcommand's --help imports no journal module.
        state.program = f"{PROG} {ctx.invoked_subcommand}"
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help(), nl=False)
        raise typer.Exit(0)


def _state(ctx: typer.Context, as_json: bool) -> CliState:
    """The shared state, with this command's ``--json`` folded in."""
    state = ctx.ensure_object(CliState)
    state.json = state.json or as_json
    return state


@contextmanager
def open_engine(
    state: CliState, runtime: str = "auto", *, read: bool = False
) -> Iterator[Sessions]:
    """The Sessions a command acts on, closed when the command ends: the client of
    ``--server`` when one is given, else the engine on the file store under the home.
    The one place the CLI chooses local or remote. ``read``: the command only reads, so a
    local home that does not exist is refused (exit 3) rather than created."""
    if state.server:
        from agentsessions.cli.remote import dial_server  # imports grpc: only with --server

        with dial_server(state.server, state.token, state.tls) as client:
            yield client
        return
    with open_local_engine(state, "", runtime, read=read) as engine:
        yield engine


@contextmanager
def open_local_engine(
    state: CliState, command: str, runtime: str = "auto", *, read: bool = False
) -> Iterator[LocalSessions]:
    """The local engine, for a command that is local by nature (``command`` names it:
    refused with one line, exit 2, when ``--server`` is given); ``read`` as for
    :func:`open_engine`."""
    so.require_local(state.server, command)
    name_process(state)
    with open_chosen(state, runtime, read=read) as engine:
        yield engine


def name_process(state: CliState) -> None:
    """Name this process in the LOCK files it takes after the verb the callback parsed."""
    if state.program:
        from agentsessions.sessions.support import set_program

        set_program(state.program)


def _uid(value: str) -> str:
    """A validated session uid (before any file is touched)."""
    from agentsessions.sessions.support import check_uid

    return check_uid(value)


def _check_project(project: str) -> str:
    from agentsessions.sessions.support import check_project

    return check_project(project)


def parse_pairs(values: Sequence[str], flag: str) -> dict[str, str]:
    """``["k=v", ...]`` as a dict; a missing ``=``, an empty key or a repeated key is an error."""
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidArgumentError(
                f"invalid {flag} {item!r}: expected KEY=VALUE", hint=f"for example {flag} team=ml"
            )
        if key in out:
            raise InvalidArgumentError(f"{flag} {key!r} given twice")
        if not key.isprintable() or not value.isprintable():
            raise InvalidArgumentError(f"invalid {flag} {item!r}: control characters")
        out[key] = value
    return out


# --- commands ------------------------------------------------------------------------------


@app.command(epilog="Example: agentsessions create --project acme --name triage --label team=ml")
def create(
    ctx: typer.Context,
    project: ProjectOpt = "default",
    name: Annotated[str, typer.Option(help="Human-readable session name.")] = "",
    harness: Annotated[str, typer.Option(help="Harness that will drive the session.")] = "",
    model: Annotated[
        str,
        typer.Option(metavar="SPEC", help=f"Model the harness will call. {MODEL_SPEC_HELP}"),
    ] = "",
    label: Annotated[
        list[str] | None, typer.Option(metavar="KEY=VALUE", help="A label; repeatable.")
    ] = None,
    annotation: Annotated[
        list[str] | None, typer.Option(metavar="KEY=VALUE", help="An annotation; repeatable.")
    ] = None,
    tools: Annotated[
        str,
        typer.Option(
            metavar="FILE", help="A workload TOML file ([tools.NAME] tables): the session's tools."
        ),
    ] = "",
    as_json: JsonOpt = False,
) -> None:
    """Create an empty session and print its uid.

    The metadata row is written at once, before any event.
    """
    state = _state(ctx, as_json)
    _check_project(project)
    labels = parse_pairs(label or [], "--label")
    annotations = parse_pairs(annotation or [], "--annotation")
    with open_engine(state) as engine:
        info = engine.create(
            project=project,
            name=name,
            harness=harness,
            model=model,
            labels=labels,
            annotations=annotations,
            tools=tools or None,
        )
    _print_uid_or_json(state, info.uid, info.to_json())


def _print_uid_or_json(state: CliState, uid: str, obj: dict[str, Any]) -> None:
    if state.json:
        from agentsessions.cli.render import write_json

        write_json(obj)
    else:
        sys.stdout.write(uid + "\n")


@app.command(
    name="list",
    epilog="Example: agentsessions list --project acme --page-size 20 --cursor <next cursor>",
)
def list_(
    ctx: typer.Context,
    project: ProjectOpt = "default",
    page_size: Annotated[
        int, typer.Option(min=0, help="Sessions per page (0 = 50; at most 500).")
    ] = 0,
    cursor: Annotated[str, typer.Option(help="Cursor printed by the previous page.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """List one page of a project's sessions, newest first.

    Deleted sessions are hidden. A session whose metadata cannot be read is listed as
    damaged (a "damaged" field with --json). When more sessions follow, the output ends with
    the cursor of the next page.
    """
    state = _state(ctx, as_json)
    _check_project(project)
    with open_engine(state, read=True) as engine:
        page = engine.list(project=project, page_size=page_size, cursor=cursor)
        # a missing catalog was rebuilt on open (a local home: a server's log has its own)
        unindexed = list(getattr(engine, "unindexed", ()))
    from agentsessions.cli import render

    for exc in unindexed:  # no row can carry them (their project is unknown): say so
        sys.stderr.write(f"{PROG}: warning: not listed: {render.one_line(exc.message)}\n")

    if state.json:
        render.write_json(
            {"sessions": [s.to_json() for s in page.sessions], "next_cursor": page.next_cursor}
        )
    else:
        render.print_page(page, project)


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
    state = _state(ctx, as_json)
    uid = _uid(session)
    from agentsessions.sessions.usage import readable_usage

    with open_engine(state, read=True) as engine:
        info = engine.get(uid)
        usage, why = readable_usage(engine, uid)
    from agentsessions.cli import render

    memory = info.memory
    assert memory is not None  # get always says where the memory is
    if state.json:
        totals = usage.to_json() if usage is not None else None
        render.write_json({**info.to_json(), "memory": memory.to_json(), "usage": totals})
    else:
        render.print_session(info, memory.text, usage.text() if usage is not None else why)


@app.command(epilog="Example: agentsessions log sess-0123456789abcdef01234567 --from 5 --json")
def log(
    ctx: typer.Context,
    session: SessionArg,
    from_seq: Annotated[int, typer.Option("--from", min=1, help="First seq to show.")] = 1,
    to_seq: Annotated[int, typer.Option("--to", min=0, help="Last seq to show (0 = head).")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """Show a session's records as a table (seq, kind, execution, hash, summary).

    With --json, prints one agentsessions.v1.LogRecord in proto3-JSON per line and nothing else.
    """
    state = _state(ctx, as_json)
    uid = _uid(session)
    from agentsessions.cli import render

    with open_engine(state, read=True) as engine:
        records = engine.read(uid, from_seq=from_seq, to_seq=to_seq)  # "not found" first
        if state.json:
            render.write_json_lines(record.to_wire_json() for record in records)
        else:
            render.print_log(records)


# --- verify --------------------------------------------------------------------------------


def looks_like_path(target: str) -> bool:
    """True if ``target`` names a file system path rather than a session uid."""
    seps = {os.sep, "/"} | ({os.altsep} if os.altsep else set())
    return any(sep in target for sep in seps) or os.path.exists(target)


def _run_verify(
    state: CliState, target: str | None, path: Path | None, all_: bool, strict: bool
) -> list[tuple[str, VerifyReport]]:
    from agentsessions.cli.render import ProgressBar
    from agentsessions.sessions.support import verify_path

    kf = state.key_file or None  # a sealed export's or a copied directory's records opened
    with ProgressBar("verifying") as progress:
        if path is not None:
            so.require_local(state.server, "verify --path")
            return [(str(path), verify_path(path, strict=strict, progress=progress, key_file=kf))]
        if all_:  # one report per session, deleted ones too, whatever fails
            with open_local_engine(state, "verify --all", read=True) as engine:
                return engine.verify_all(strict=strict, progress=progress)
        assert target is not None
        if looks_like_path(target):
            so.require_local(state.server, "verify PATH")
            if not os.path.exists(target):
                raise InvalidArgumentError(
                    f"{target!r} is neither a session id nor an existing path",
                    hint=f"{PROG} list",
                )
            path = Path(target)
            return [(target, verify_path(path, strict=strict, progress=progress, key_file=kf))]
        uid = _uid(target)
        with open_engine(state, read=True) as engine:
            return [(uid, engine.verify(uid, strict=strict, progress=progress))]


@app.command(
    epilog="Examples: agentsessions verify sess-0123456789abcdef01234567 --strict | "
    "agentsessions verify ./copy.agx | agentsessions verify --all"
)
def verify(
    ctx: typer.Context,
    target: Annotated[
        str | None,
        typer.Argument(
            metavar="[SESSION|PATH]",
            help="Session uid, or a session directory or export file anywhere on disk.",
        ),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Verify every session in the home.")] = False,
    path: Annotated[
        Path | None,
        typer.Option(
            "--path", exists=True, help="A session directory or export file (works offline)."
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option(help="Also re-canonicalise every event and check it matches its bytes.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Walk hash chains from prev_hash "" and check seqs, links and content hashes.

    Exits 0 only if every chain verifies; otherwise reports the first bad seq and why. Each
    session's session.json is checked too. --all prints one line per session and exits with
    the code of the first failing one (in uid order). A long journal shows a progress bar on
    stderr.
    """
    state = _state(ctx, as_json)
    chosen = sum([target is not None, path is not None, all_])
    if chosen != 1:
        raise InvalidArgumentError(
            "verify needs exactly one of SESSION, PATH, --path PATH or --all",
            hint=f"{PROG} verify --help",
        )
    reports = _run_verify(state, target, path, all_, strict)
    _finish_verify(state, reports, all_)


def _finish_verify(state: CliState, reports: list[tuple[str, VerifyReport]], all_: bool) -> None:
    from agentsessions.cli import render

    if state.json:
        if all_:
            render.write_json(
                {"ok": all(r.ok for _, r in reports), "reports": [r.to_json() for _, r in reports]}
            )
        else:
            render.write_json(reports[0][1].to_json())
    else:
        render.print_verify(reports)
    failed = [(label, r) for label, r in reports if not r.ok]
    if failed:
        label, report = failed[0]
        where = f" at seq {report.first_bad_seq}" if report.first_bad_seq is not None else ""
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        sys.stderr.write(
            render.error_text(f"{label} does not verify{where}: {report.reason}{more}")
        )
        raise typer.Exit(report.exit_code)


# --- export / import / delete --------------------------------------------------------------


@app.command(epilog="Example: agentsessions export sess-0123456789abcdef01234567 -o triage.agx")
def export(
    ctx: typer.Context,
    session: SessionArg,
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE", help="File to write.")],
    no_compress: Annotated[
        bool, typer.Option("--no-compress", help="Write plain JSON lines instead of zstd.")
    ] = False,
    force: Annotated[bool, typer.Option(help="Overwrite FILE if it exists.")] = False,
    decrypt: DecryptOpt = False,
    ciphertext: CiphertextOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Write a session to one portable, self-verifying file (metadata plus records).

    The file is zstd-compressed unless --no-compress; `verify FILE` checks it anywhere. An
    encrypted session needs a choice: --decrypt or --ciphertext (else exit 2).
    """
    from agentsessions.cli import render
    from agentsessions.sessions.support import is_stream

    state = _state(ctx, as_json)
    uid = _uid(session)
    choice = export_choice(state.server, decrypt, ciphertext)
    if output.exists() and not force and not is_stream(output):  # /dev/stdout: written in place
        raise InvalidArgumentError(f"{output} already exists", hint="pass --force to overwrite it")
    try:
        with open_engine(state, read=True) as engine, render.ProgressBar("exporting") as progress:
            exporter: Any = engine  # both engines take overwrite; the Protocol does not
            summary = exporter.export(
                uid, output, compress=not no_compress, progress=progress, overwrite=force, **choice
            )
    except StorageError as exc:
        if isinstance(exc.__cause__, BrokenPipeError):
            return  # `export -o /dev/stdout | head`: the reader hung up; end quietly
        raise
    # exporting to /dev/stdout: the file is the output, so the summary goes to stderr
    with contextlib.redirect_stdout(sys.stderr) if is_stream(output) else contextlib.nullcontext():
        if state.json:
            render.write_json(summary)
        else:
            render.print_export(summary)


@app.command(
    name="import",
    epilog="Example: agentsessions import triage.agx --project acme --name triage-copy",
)
def import_(
    ctx: typer.Context,
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE",
            exists=True,
            dir_okay=False,
            help="Our export, LogRecord JSON lines, or a Go reference record array.",
        ),
    ],
    project: Annotated[
        str | None, typer.Option("--project", "-p", help="Project of the new session.")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Name of the new session.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Recreate a session from a file with identical seqs and hashes; print the new uid.

    The format is detected from the content. Any record whose hash or link does not verify
    is refused and nothing is created.
    """
    from agentsessions.cli import render

    state = _state(ctx, as_json)
    if project is not None:
        _check_project(project)
    with open_engine(state) as engine, render.ProgressBar("importing") as progress:
        info = engine.import_(file, project=project, name=name, progress=progress)
    _print_uid_or_json(state, info.uid, info.to_json())


@app.command(epilog="Example: agentsessions demo   (or: agentsessions --home ./demo-home demo)")
def demo(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Run the main job end to end, offline, and narrate each step.

    A 3-turn chat session on the offline scripted model; its records; a turn killed with
    SIGKILL while its model call is in flight, then resumed; a replay with zero model calls;
    a fork into two children that each run a turn; suspend and resume; the shipped Go
    reference journal imported and replayed; every chain verified. Uses a fresh temporary
    home unless --home or AGENTSESSIONS_HOME is given; exits non-zero if any step fails.
    """
    from agentsessions.cli.demo import run_demo

    state = _state(ctx, as_json)
    so.require_local(state.server, "demo")
    name_process(state)
    run_demo(state.home, as_json=state.json)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: run the CLI and exit with its status."""
    root_command()(args=argv, prog_name=PROG)


def root_command() -> AgentSessionsGroup:
    """``app`` as typer would build it (same group, same commands in the same order), but
    with each subcommand built on first use (:func:`.lazygroup.lazy_group`).

    typer's own entry (``app(...)``) only adds an exception hook, a no-op with pretty
    exceptions off; tests that hand ``app`` to typer's CliRunner get the eager build.
    """
    return lazy_group(app, AgentSessionsGroup)

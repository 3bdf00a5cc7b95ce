"""``exec``: run one turn (creating the session when none is named) and stream its answer.

Nothing is written before the request is checked: the session, the harness (known, and
placeable on the runtime), the model spec, the inputs and the config (the engine,
:class:`~agentsessions.sessions.local.LocalSessions`, makes every check); the checks that
need no store run before the home is opened.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from agentsessions.cli.context import command_state, open_engine
from agentsessions.cli.options import (
    DEFAULT_RUNTIME,
    MODEL_SPEC_HELP,
    HarnessOpt,
    IdentityOpt,
    JsonOpt,
    OriginOpt,
    ProjectOpt,
    RuntimeOpt,
    WaitOpt,
    parse_pairs,
    session_uid,
)
from agentsessions.cli.provenance import parse_identity, parse_origin
from agentsessions.cli.root import typer_app as app
from agentsessions.cli.stream import TurnPrinter
from agentsessions.errors import InvalidArgumentError


def read_inputs(values: Sequence[str]) -> list[str]:
    """The turn's input texts: the ``--input`` values, else stdin when it is not a terminal.

    Stdin is one input (one trailing newline dropped); empty stdin means no input.
    """
    if values:
        return [_utf8(value, "--input") for value in values]
    stream = sys.stdin
    if stream is None or stream.closed or stream.isatty():
        return []
    buffer = getattr(stream, "buffer", None)
    # the bytes, decoded strictly: a text stream may decode with surrogateescape and hand
    # over lone surrogates that only fail later, deep in the journal
    raw = buffer.read() if buffer is not None else stream.read().encode("utf-8", "surrogateescape")
    try:
        text = io.StringIO(raw.decode("utf-8"), newline=None).read()  # universal newlines
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(
            f"stdin is not UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start}",
            hint="convert it first, for example with iconv -t UTF-8",
        ) from None
    text = text.removesuffix("\n")
    return [text] if text else []


def _utf8(value: str, flag: str) -> str:
    """``value`` as given on the command line, refused if it is not UTF-8 (the shell passed
    bytes that Python kept as lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(f"{flag} is not UTF-8 text") from None
    return value


def read_config(value: str) -> bytes:
    """``--config`` as bytes, verbatim: the text itself, or the file named by ``@PATH``."""
    if not value.startswith("@"):
        return _utf8(value, "--config").encode("utf-8")
    path = Path(value[1:]).expanduser()
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InvalidArgumentError(
            f"cannot read --config file {str(path)!r}: {exc.strerror or exc}"
        ) from None


NewOrExistingArg = Annotated[
    str | None,
    typer.Argument(metavar="[SESSION]", help="Session uid; omitted: create a new session."),
]
InputsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--input",
        "-i",
        metavar="TEXT",
        help="A user message; repeatable. Without it, stdin (if not a terminal) is one "
        "message. With neither, an interrupted or failed turn is continued, as resume "
        "does (else a turn runs without new input).",
    ),
]
TurnModelOpt = Annotated[
    str,
    typer.Option(
        metavar="SPEC",
        help="Model for a new session (default: the session's model, else echo); on an "
        "existing session it applies to this turn only: the turn's start records it, so "
        "resume continues the turn on it, and each MODEL_CALL records the model it used. "
        "Only for a harness that calls the session's model (chat): with echo, counter or "
        f"memory it is refused (exit 2). {MODEL_SPEC_HELP}",
    ),
]
ConfigOpt = Annotated[
    str,
    typer.Option(
        metavar="JSON|@FILE",
        help='Harness config, passed verbatim (e.g. chat: \'{"system_prompt": "..."}\').',
    ),
]
FreshStartOpt = Annotated[
    bool,
    typer.Option(
        "--fresh-start",
        help="For a harness whose memory is its state (counter) whose memory is gone "
        "(its warm host was stopped or idled out): start it again with empty memory. "
        "The journal records the reset (a LIFECYCLE RESUME 'fresh start: ...'), and "
        "replay restarts the harness empty there too.",
    ),
]
NewLabelOpt = Annotated[
    list[str] | None,
    typer.Option(metavar="KEY=VALUE", help="A label of a new session; repeatable."),
]
ActorOpt = Annotated[
    str,
    typer.Option(
        metavar="FIELDS",
        help="Who wrote this command's inputs, recorded as each INPUT's actor: "
        "principal=NAME[,issuer=ISSUER][,subject=ID]. Over --server a token's inputs are "
        "recorded as the token's identity unless it was created with --name-authors.",
    ),
]
ToolsOpt = Annotated[
    str,
    typer.Option(
        metavar="FILE",
        help="A workload TOML file ([tools.NAME] tables): the session's tools, recorded "
        "with it for this and later turns (replacing earlier ones).",
    ),
]

CommitIdOpt = Annotated[
    str,
    typer.Option(
        "--commit-id",
        metavar="ID",
        help="The turn's idempotency key (for example a webhook's delivery id): a retry "
        "with an id that landed in SESSION already writes nothing and prints that turn; one "
        "whose turn was cut off finishes it. The newest 1,024 ids of a session are known.",
    ),
]
DurabilityOpt = Annotated[
    str,
    typer.Option(
        "--durability",
        metavar="MODE",
        help="step (the default): the input is durable at once, each effect before the next "
        "leaves the process; turn: a turn that calls no tool is durable in one sync at its "
        "end, and a crash before then loses only that turn (retry it with --commit-id).",
    ),
]


@app.command(
    name="exec",
    epilog="Examples: agentsessions exec --input hello | "
    "agentsessions exec sess-0123456789abcdef01234567 --input 'and then?' | "
    "echo hello | agentsessions exec --harness chat --model scripted:seed=7 | "
    "agentsessions exec --origin source=github,subject=owner/repo#12 --input 'a comment'",
)
def exec_(
    ctx: typer.Context,
    session: NewOrExistingArg = None,
    inputs: InputsOpt = None,
    harness: HarnessOpt = "",
    model: TurnModelOpt = "",
    config: ConfigOpt = "",
    runtime: RuntimeOpt = DEFAULT_RUNTIME,
    wait: WaitOpt = 0.0,
    fresh_start: FreshStartOpt = False,
    project: ProjectOpt = "default",
    name: Annotated[str, typer.Option(help="Name of a new session.")] = "",
    label: NewLabelOpt = None,
    tools: ToolsOpt = "",
    commit_id: CommitIdOpt = "",
    durability: DurabilityOpt = "",
    origin: OriginOpt = "",
    identity: IdentityOpt = "",
    actor: ActorOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Run one turn: record the inputs, drive the harness, stream the answer.

    Without SESSION a session is created (its uid goes to stderr first); with --origin
    and no SESSION, the turn runs on the session that origin names, created first if
    there is none (producers racing on one new origin make one session). stdout gets only
    the assistant's text as it streams; each journaled record is a line on stderr. With
    --json, one object (the turn's result) is printed at the end instead.

    Ctrl-C cancels the turn at its next effect boundary, as cancel does, and exits 130 once
    END CANCELED is journaled; a second Ctrl-C exits 130 at once, leaving the turn open for
    cancel (or resume) to close.
    """
    from agentsessions.cli.turnview import finish_turn, watch_turn  # when a turn runs
    from agentsessions.sessions.local import LocalSessions

    state = command_state(ctx, as_json)
    # the checks that need no store come first: a refused exec never opens the home
    from agentsessions.v1.turn import TurnRequest

    request = TurnRequest.of(
        session_uid(session) if session is not None else None, _inputs(inputs, actor),
        harness=harness or None, model=model or None, config=read_config(config), wait=wait,
        project=project, name=name, labels=parse_pairs(label or [], "--label"),
        fresh_start=fresh_start, tools=tools or None, commit_id=commit_id or None,
        durability=durability or None, origin=parse_origin(origin),
        identity=parse_identity(identity),
    )  # fmt: skip
    uid = request.uid
    printer = TurnPrinter(state.json)
    LocalSessions.check_request(request)
    with open_engine(state, runtime) as engine:
        frames = engine.exec(request)
        last, interrupted = watch_turn(state, printer, engine, uid, frames, waking=not fresh_start)
    assert last.turn is not None
    finish_turn(state, printer, last.turn, interrupted=interrupted)


def _inputs(inputs: list[str] | None, actor: str) -> list[Any]:
    """The turn's inputs (``--input`` texts, else stdin), each authored by ``--actor``."""
    from agentsessions.v1.provenance import Authored

    texts = read_inputs(inputs or [])
    author = parse_identity(actor, "--actor")
    return [Authored(t, author) for t in texts] if author else list(texts)

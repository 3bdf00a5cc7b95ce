"""``exec``: run one turn (creating the session when none is named) and stream its answer
(its options; what it does: :mod:`.execution`, which :mod:`.fast` runs too).

Nothing is written before the request is checked: the session, the harness (known, and
placeable on the runtime), the model spec, the inputs and the config (the engine,
:class:`~agentsessions.sessions.local.LocalSessions`, makes every check); the checks that
need no store run before the home is opened.
"""

from __future__ import annotations

from typing import Annotated

import typer

from agentsessions.cli.context import command_state
from agentsessions.cli.execution import run_exec
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
)
from agentsessions.cli.root import typer_app as app

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
    run_exec(
        command_state(ctx, as_json), session, inputs, harness, model, config, runtime, wait,
        fresh_start, project, name, label, tools, commit_id, durability, origin, identity, actor,
    )  # fmt: skip

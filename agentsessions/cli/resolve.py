"""The ``resolve`` command: say what really happened to an unresolved tool call.

It keeps the person's answer as the call's receipt (:meth:`Sessions.resolve` with
``resume=False``) and then resumes the session in one step, so the turn continues with a
TOOL_RESULT recorded from that receipt. The two steps are separate writes: if the resume
fails after the answer was kept, the command says so (the answer stands; ``resume SESSION``
continues) and exits with the resume's code. The protocol lives in
:mod:`agentsessions.controller.toolcalls`.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from agentsessions.cli.context import command_state, open_engine
from agentsessions.cli.options import JsonOpt, SessionArg, session_uid
from agentsessions.cli.root import typer_app as app
from agentsessions.errors import InvalidArgumentError

CallIdOpt = Annotated[
    str, typer.Option("--call", metavar="ID", help="The unresolved tool call's id (see get).")
]
ResultOpt = Annotated[
    str | None,
    typer.Option(
        "--result", metavar="JSON", help="What the tool returned: a JSON object (its output)."
    ),
]
FailedOpt = Annotated[
    str | None,
    typer.Option("--failed", metavar="REASON", help="The call failed: why (the model reads it)."),
]
ActorOpt = Annotated[
    str,
    typer.Option(
        "--actor", metavar="NAME", help="Who resolves it (in the result; default: your login)."
    ),
]


@app.command(
    epilog="Example: agentsessions resolve sess-0123456789abcdef01234567 --call c1 "
    "--result '{\"ok\": true}'"
)
def resolve(
    ctx: typer.Context,
    session: SessionArg,
    call: CallIdOpt = "",
    result: ResultOpt = None,
    failed: FailedOpt = None,
    actor: ActorOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Record what an unresolved tool call really did, then resume: the turn goes on.

    A call is unresolved when a crash cut it after its intent and its executor cannot say
    whether it ran (get shows an 'unresolved' row). Give exactly one of --result (the
    tool's output, a JSON object) or --failed (an error result the model sees). A call that
    is not unresolved is refused (exit 22), a missing or malformed answer too (exit 2);
    nothing is changed then.
    """
    from agentsessions.cli.approve import login_name
    from agentsessions.cli.turnview import continue_turn
    from agentsessions.sessions.resolving import check_answer

    state = command_state(ctx, as_json)
    uid = session_uid(session)
    if not call:
        raise InvalidArgumentError(
            "resolve needs --call ID (the unresolved tool call); nothing was changed",
            hint=f"agentsessions get {uid}  (the 'unresolved' row names the call)",
        )
    output = parse_result(result) if result is not None else None
    check_answer(output, failed)  # before the session is opened: nothing is touched
    with open_engine(state) as engine:
        done = engine.resolve(
            uid,
            call_id=call,
            result=output,
            failed=failed,
            actor=actor or login_name(),
            resume=False,
        )
        if not state.json:
            how = "failed" if failed is not None else "a result"
            sys.stderr.write(
                f"call {done.call.tool_call_id} ({done.call.tool}) resolved with {how}; "
                "resuming the turn\n"
            )
        continue_turn(
            state,
            engine,
            uid,
            committed=f"the resolution of call {done.call.tool_call_id} was kept",
            document=done.to_json(),
        )


def parse_result(text: str) -> dict[str, Any]:
    """``--result`` text as a JSON object, or InvalidArgumentError."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidArgumentError(
            f"resolve --result is not valid JSON: {exc}; nothing was changed",
            hint="for example: --result '{\"ok\": true}'",
        ) from None
    if not isinstance(value, dict):
        raise InvalidArgumentError(
            f"resolve --result must be a JSON object (the tool's output), not "
            f"{type(value).__name__}; nothing was changed",
            hint="for example: --result '{\"ok\": true}'",
        )
    return value

"""The ``approve`` and ``deny`` commands, and how a parked turn is shown.

Each command commits the decision (:meth:`Sessions.approve`) and then resumes the session
in one step, so the turn continues with the receipt. The two steps are separate writes: if
the resume fails after the decision was committed, the command says so (the decision
stands; ``resume SESSION`` continues) and exits with the resume's code. The protocol's rules
live in :mod:`agentsessions.controller.approvals`.
"""

from __future__ import annotations

import getpass
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from agentsessions.cli.context import command_state, open_engine
from agentsessions.cli.options import JsonOpt, SessionArg, session_uid
from agentsessions.cli.root import typer_app as app

if TYPE_CHECKING:
    from agentsessions.cli.context import CliState
    from agentsessions.sessions.values import Approval

ReasonOpt = Annotated[
    str, typer.Option("--reason", metavar="TEXT", help="Why (journaled with the decision).")
]
ActorOpt = Annotated[
    str,
    typer.Option(
        "--actor",
        metavar="NAME",
        help="Who decides (journaled as the event's actor; default: your login name).",
    ),
]
ExecutionOpt = Annotated[
    str,
    typer.Option("--execution", metavar="ID", help="Execution id (default: the pending one)."),
]
CallOpt = Annotated[
    str, typer.Option("--call", metavar="ID", help="Tool call id (default: the pending one).")
]
RequestSeqOpt = Annotated[
    int,
    typer.Option(
        "--request-seq",
        min=1,
        metavar="SEQ",
        help="The APPROVAL_REQUEST's seq (default: the pending one).",
    ),
]


def _decide(
    ctx: typer.Context,
    session: str,
    approved: bool,
    reason: str,
    actor: str,
    execution: str,
    call: str,
    request_seq: int | None,
    as_json: bool,
) -> None:
    from agentsessions.cli.turnview import continue_turn

    state = command_state(ctx, as_json)
    uid = session_uid(session)
    who = actor or login_name()
    with open_engine(state) as engine:
        decided = engine.approve(
            uid,
            approved=approved,
            reason=reason,
            actor=who,
            execution_id=execution or None,
            tool_call_id=call or None,
            request_seq=request_seq,
        )
        _say_decided(state, decided)
        continue_turn(
            state,
            engine,
            uid,
            committed=f"the decision was committed (seq {decided.decision.seq})",
            document=decided.to_json(),
        )


def _say_decided(state: CliState, decided: Approval) -> None:
    verdict = "approved" if decided.approved else "denied"
    again = " (already recorded)" if decided.existing else ""
    if state.json:
        return  # said with the turn, in one JSON document
    sys.stderr.write(
        f"call {decided.ref.tool_call_id} {verdict}{again}: decision at seq "
        f"{decided.decision.seq}; resuming the turn\n"
    )


def login_name() -> str:
    """This user's login name, who answers when ``--actor`` is not given ("" if unknown)."""
    try:
        return getpass.getuser()
    except Exception:  # no login name (a container without a passwd entry)
        return ""


@app.command(epilog="Example: agentsessions approve sess-0123456789abcdef01234567 --reason ok")
def approve(
    ctx: typer.Context,
    session: SessionArg,
    reason: ReasonOpt = "",
    actor: ActorOpt = "",
    execution: ExecutionOpt = "",
    call: CallOpt = "",
    request_seq: RequestSeqOpt | None = None,
    as_json: JsonOpt = False,
) -> None:
    """Approve a parked tool call, then resume: the tool runs once and the turn goes on.

    Commits APPROVAL_RESULT (approved, --reason, --actor) for the pending request (or the
    one --execution/--call/--request-seq name), then resumes the session. Repeating the same
    decision changes nothing; a different one is refused (exit 21).
    """
    _decide(ctx, session, True, reason, actor, execution, call, request_seq, as_json)


@app.command(epilog="Example: agentsessions deny sess-0123456789abcdef01234567 --reason 'no'")
def deny(
    ctx: typer.Context,
    session: SessionArg,
    reason: ReasonOpt = "",
    actor: ActorOpt = "",
    execution: ExecutionOpt = "",
    call: CallOpt = "",
    request_seq: RequestSeqOpt | None = None,
    as_json: JsonOpt = False,
) -> None:
    """Deny a parked tool call, then resume: the tool never runs, the model reads the denial.

    Commits APPROVAL_RESULT (denied) as approve does, then resumes the session: the call's
    result is an error with code APPROVAL_DENIED and the turn goes on.
    """
    _decide(ctx, session, False, reason, actor, execution, call, request_seq, as_json)

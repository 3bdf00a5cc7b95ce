"""The ``produce`` commands: producers that turn an external conversation into sessions.

``produce github`` is the webhook receiver of GitHub's ``issues`` and ``issue_comment``
events (:mod:`agentsessions.producers`); ``produce send`` is a local webhook sender that
builds, signs and POSTs a delivery the way GitHub does, to try a receiver offline. Their
options, and where secrets come from (a file or an environment variable, never a flag's
value), are in :mod:`.produceopts`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from agentsessions.cli import produceopts as po
from agentsessions.cli.context import PROG, command_state, open_engine
from agentsessions.cli.helpview import HelpGroup
from agentsessions.cli.options import (
    DEFAULT_RUNTIME,
    JsonOpt,
    ProjectOpt,
    RuntimeOpt,
    project_name,
)
from agentsessions.cli.root import typer_app as app
from agentsessions.errors import InvalidArgumentError

if TYPE_CHECKING:
    from agentsessions.producers.lanes import EditPolicy, ProducerSettings
    from agentsessions.producers.sinks import ReplySink
    from agentsessions.sessions.api import Sessions

produce_app = typer.Typer(
    name="produce",
    cls=HelpGroup,
    help="Turn an external conversation into sessions: a GitHub issue's comments become "
    "turns of one session, and the agent's answers are sent back.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(produce_app, name="produce")


def _log(line: str) -> None:
    sys.stderr.write(f"{PROG}: {line}\n")
    sys.stderr.flush()


@produce_app.command(
    epilog="Example: AGENTSESSIONS_GITHUB_SECRET=... agentsessions produce github "
    "--listen 127.0.0.1:8090 --harness chat --model scripted:seed=1 --reply print"
)
def github(
    ctx: typer.Context,
    listen: po.ListenOpt = po.DEFAULT_LISTEN,
    secret_file: po.SecretFileOpt = "",
    harness: po.HarnessOpt = "chat",
    model: po.ModelOpt = "",
    project: ProjectOpt = "default",
    reply: po.ReplyOpt = "print",
    reply_token_file: po.ReplyTokenFileOpt = "",
    bot: po.BotOpt = None,
    on_edit: po.OnEditOpt = "quiet",
    wait: po.TurnWaitOpt = 60.0,
    runtime: RuntimeOpt = DEFAULT_RUNTIME,
    as_json: JsonOpt = False,
) -> None:
    """Receive GitHub issue webhooks and answer each new issue and comment with a turn.

    Each issue is one session (found by owner/repo#number, made on its first event); each
    new issue or comment is recorded as the turn's input, its author as the input's author,
    and the agent's answer goes to --reply. A delivery is answered 202 once its input is
    durable (the turn runs on after that); one issue's turns run one at a time, in order,
    different issues' in parallel. Deliveries must carry GitHub's X-Hub-Signature-256 for
    the webhook's secret (--secret-file or $AGENTSESSIONS_GITHUB_SECRET): anything else is
    401 and nothing is written. Configure the webhook for the "Issues" and "Issue comments"
    events, content type application/json.

    At start, turns a killed receiver left cut off are completed and their answers sent.
    A failed turn leaves its session resumable (agentsessions resume SESSION). SIGINT or
    SIGTERM stop it: no new delivery, running turns finish and their answers are sent.
    """
    state = command_state(ctx, as_json)
    po.check_on_edit(on_edit)
    from agentsessions.producers.receiver import parse_listen

    parse_listen(listen)  # a bad address is refused before the home is opened
    secret = po.webhook_secret(secret_file)
    token = po.read_secret(reply_token_file, po.TOKEN_ENV, "reply token")
    sink = po.reply_sink(reply, token=token, as_json=state.json)
    settings = _settings(project, harness, model, wait, on_edit)
    with open_engine(state, runtime) as engine:
        _receive(engine, listen, secret, sink, settings, bot or [], state.json)


def _settings(
    project: str, harness: str, model: str, wait: float, on_edit: str
) -> ProducerSettings:
    from agentsessions.producers.lanes import ProducerSettings

    policy = cast("EditPolicy", on_edit)  # checked: po.check_on_edit
    return ProducerSettings(project_name(project), harness, model, wait=wait, on_edit=policy)


def _receive(
    engine: Sessions,
    listen: str,
    secret: bytes,
    sink: ReplySink,
    settings: ProducerSettings,
    bots: list[str],
    as_json: bool,
) -> None:
    from agentsessions.producers.github import SOURCE, GitHubEndpoint
    from agentsessions.producers.lanes import Producer
    from agentsessions.producers.receiver import Receiver, serve_until_signal

    producer = Producer(engine, sink, settings, log=_log)
    with producer:
        recovered = producer.recover(SOURCE)
        if recovered:
            _log(f"completing {recovered} turn(s) a stopped receiver left cut off")
        receiver = Receiver(listen, GitHubEndpoint(producer, secret, bots=bots), log=_log)

        def ready() -> None:
            if as_json:
                from agentsessions.cli.render import write_json

                write_json({"address": receiver.address}, compact=True)
            else:
                sys.stdout.write(f"listening on {receiver.address}\n")
            sys.stdout.flush()

        serve_until_signal(receiver, ready)
        _log("stopping: finishing running turns")
    _log("stopped")


@produce_app.command(
    epilog="Example: agentsessions produce send 127.0.0.1:8090 --issue octo/hello#1 "
    "--author alice --comment 'Is this fixed?'"
)
def send(
    ctx: typer.Context,
    url: po.ReceiverArg,
    issue: po.IssueOpt = "",
    author: po.AuthorOpt = "octocat",
    comment: po.CommentOpt = "",
    title: po.TitleOpt = "",
    body: po.BodyOpt = "",
    payload: po.PayloadOpt = "",
    event: po.EventOpt = "issue_comment",
    delivery: po.DeliveryOpt = "",
    secret_file: po.SecretFileOpt = "",
    connect_wait: po.ConnectWaitOpt = 10.0,
    as_json: JsonOpt = False,
) -> None:
    """Send one signed GitHub webhook delivery to a receiver, as GitHub would (offline).

    Builds an issues or issue_comment payload in GitHub's documented shape (or sends
    --payload FILE), signs it with the webhook's secret (--secret-file or
    $AGENTSESSIONS_GITHUB_SECRET) and prints the receiver's answer. Exit 0 when it
    answered 2xx, else 12.
    """
    state = command_state(ctx, as_json)
    from agentsessions.producers.send import deliver

    data, event = _payload(payload, event, issue, author, (comment, title, body))
    secret = po.webhook_secret(secret_file)
    sent = deliver(url, event, data, secret, delivery_id=delivery, connect_wait=connect_wait)
    if state.json:
        from agentsessions.cli.render import write_json

        write_json({"status": sent.status, "delivery": sent.delivery_id, "answer": sent.body})
    else:
        sys.stdout.write(f"{sent.status} {_summary(sent.body)}\n")
    if not 200 <= sent.status < 300:
        from agentsessions.errors import UnavailableError

        raise UnavailableError(
            f"the receiver answered {sent.status} to delivery {sent.delivery_id}"
        )


def _payload(
    path: str, event: str, issue: str, author: str, texts: tuple[str, str, str]
) -> tuple[dict[str, object] | bytes, str]:
    """What ``send`` sends, and its event: the file, a new comment, or a new issue."""
    from agentsessions.producers import send as sender

    comment, title, body = texts
    if path:
        try:
            return Path(path).expanduser().read_bytes(), event
        except OSError as exc:
            reason = exc.strerror or exc
            raise InvalidArgumentError(f"cannot read --payload {path!r}: {reason}") from None
    if comment:
        return sender.comment_event(issue, author=author, body=comment), "issue_comment"
    if title:
        return sender.issue_event(issue, author=author, title=title, body=body), "issues"
    raise InvalidArgumentError("say what to send: --comment TEXT, --title TEXT or --payload FILE")


def _summary(answer: dict[str, object]) -> str:
    if answer.get("status") == "recorded":
        return f"recorded in {answer.get('session')} at seq {answer.get('seq')}"
    if answer.get("status") == "ignored":
        return f"ignored: {answer.get('reason')}"
    return str(answer.get("error") or answer.get("status") or answer)

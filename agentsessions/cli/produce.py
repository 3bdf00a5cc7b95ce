"""The ``produce`` commands: producers that turn an external conversation into sessions.

``produce github`` is the webhook receiver of GitHub's ``issues`` and ``issue_comment``
events (:mod:`agentsessions.producers`); ``produce send`` is a local webhook sender that
builds, signs and POSTs a delivery the way GitHub does, to try a receiver offline. Secrets
come from a file or an environment variable, never from a flag's value (a command line is
visible to every user of the machine).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from agentsessions.cli.app import app
from agentsessions.cli.context import PROG, command_state, open_engine
from agentsessions.cli.helpview import HelpGroup
from agentsessions.cli.options import (
    DEFAULT_RUNTIME,
    MODEL_SPEC_HELP,
    HarnessOpt,
    JsonOpt,
    ProjectOpt,
    RuntimeOpt,
    project_name,
)
from agentsessions.errors import InvalidArgumentError

if TYPE_CHECKING:
    from agentsessions.producers.lanes import EditPolicy, ProducerSettings
    from agentsessions.producers.sinks import ReplySink
    from agentsessions.sessions.api import Sessions

SECRET_ENV = "AGENTSESSIONS_GITHUB_SECRET"
TOKEN_ENV = "AGENTSESSIONS_GITHUB_TOKEN"
DEFAULT_LISTEN = "127.0.0.1:8090"
EDIT_POLICIES = ("reply", "quiet", "ignore")

produce_app = typer.Typer(
    name="produce",
    cls=HelpGroup,
    help="Turn an external conversation into sessions: a GitHub issue's comments become "
    "turns of one session, and the agent's answers are sent back.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(produce_app, name="produce")

SecretFileOpt = Annotated[
    str,
    typer.Option(
        "--secret-file",
        metavar="FILE",
        help=f"The webhook's secret (the file's text, one trailing newline dropped); "
        f"else ${SECRET_ENV}.",
    ),
]


def read_secret(path: str, env: str, what: str) -> str:
    """A secret from file ``path``, else environment variable ``env``; "" if neither."""
    if path:
        try:
            return Path(path).expanduser().read_text(encoding="utf-8").removesuffix("\n")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise InvalidArgumentError(f"cannot read the {what} file {path!r}: {reason}") from None
    return os.environ.get(env, "")


def _secret(path: str) -> bytes:
    secret = read_secret(path, SECRET_ENV, "webhook secret")
    if not secret:
        raise InvalidArgumentError(
            "no webhook secret: every delivery must be signed with it",
            hint=f"--secret-file FILE, or ${SECRET_ENV} (the secret set on GitHub's webhook)",
        )
    return secret.encode("utf-8")


def _log(line: str) -> None:
    sys.stderr.write(f"{PROG}: {line}\n")
    sys.stderr.flush()


@produce_app.command(
    epilog="Example: AGENTSESSIONS_GITHUB_SECRET=... agentsessions produce github "
    "--listen 127.0.0.1:8090 --harness chat --model scripted:seed=1 --reply print"
)
def github(
    ctx: typer.Context,
    listen: Annotated[
        str,
        typer.Option(
            metavar="HOST:PORT|unix:///PATH",
            help="Where to receive webhooks (port 0: any free port; the first line says which).",
        ),
    ] = DEFAULT_LISTEN,
    secret_file: SecretFileOpt = "",
    harness: HarnessOpt = "chat",
    model: Annotated[
        str, typer.Option(metavar="SPEC", help=f"Model of new sessions. {MODEL_SPEC_HELP}")
    ] = "",
    project: ProjectOpt = "default",
    reply: Annotated[
        str,
        typer.Option(
            metavar="print|file:PATH|github|URL",
            help="Where answers go: printed on stdout, appended to PATH as JSON lines, "
            "posted as an issue comment through GitHub's API (needs a token), or POSTed as "
            '{"body": TEXT} to URL (it may name {owner}, {repo} and {number}).',
        ),
    ] = "print",
    reply_token_file: Annotated[
        str,
        typer.Option(
            metavar="FILE",
            help=f"Bearer token for --reply github or URL (the file's text); else ${TOKEN_ENV}.",
        ),
    ] = "",
    bot: Annotated[
        list[str] | None,
        typer.Option(
            metavar="LOGIN",
            help="The agent's own GitHub login (repeatable): its events are never turns. "
            "Accounts GitHub marks as bots are never answered either.",
        ),
    ] = None,
    on_edit: Annotated[
        str,
        typer.Option(
            metavar="reply|quiet|ignore",
            help="An edited or deleted issue or comment: recorded as an input of its own and "
            "answered (reply), recorded with its answer kept in the journal only (quiet), "
            "or not recorded (ignore).",
        ),
    ] = "quiet",
    wait: Annotated[
        float,
        typer.Option(
            min=0.0,
            metavar="SECONDS",
            help="How long a turn waits for a session another process is writing.",
        ),
    ] = 60.0,
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
    if on_edit not in EDIT_POLICIES:
        raise InvalidArgumentError(
            f"invalid --on-edit {on_edit!r}: expected reply, quiet or ignore"
        )
    from agentsessions.producers.receiver import parse_listen
    from agentsessions.producers.sinks import open_sink

    parse_listen(listen)  # a bad address is refused before the home is opened
    secret = _secret(secret_file)
    token = read_secret(reply_token_file, TOKEN_ENV, "reply token")
    sink = open_sink(reply, token=token, as_json=state.json)
    settings = _settings(project, harness, model, wait, on_edit)
    with open_engine(state, runtime) as engine:
        _receive(engine, listen, secret, sink, settings, bot or [], state.json)


def _settings(
    project: str, harness: str, model: str, wait: float, on_edit: str
) -> ProducerSettings:
    from agentsessions.producers.lanes import ProducerSettings

    policy = cast("EditPolicy", on_edit)  # checked against EDIT_POLICIES
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
    url: Annotated[
        str,
        typer.Argument(
            metavar="URL", help="The receiver: HOST:PORT, http://HOST:PORT/PATH or unix:///PATH."
        ),
    ],
    issue: Annotated[
        str, typer.Option(metavar="OWNER/REPO#N", help="The issue the event is about.")
    ] = "",
    author: Annotated[str, typer.Option(metavar="LOGIN", help="Who wrote it.")] = "octocat",
    comment: Annotated[
        str, typer.Option(metavar="TEXT", help="Send an issue_comment 'created' with TEXT.")
    ] = "",
    title: Annotated[
        str, typer.Option(metavar="TEXT", help="Send an issues 'opened' with this title.")
    ] = "",
    body: Annotated[str, typer.Option(metavar="TEXT", help="The opened issue's body.")] = "",
    payload: Annotated[
        str,
        typer.Option(
            metavar="FILE", help="Send this JSON payload as is (a recorded delivery; with --event)."
        ),
    ] = "",
    event: Annotated[
        str, typer.Option(metavar="NAME", help="X-GitHub-Event of --payload.")
    ] = "issue_comment",
    delivery: Annotated[
        str,
        typer.Option(
            metavar="ID",
            help="X-GitHub-Delivery (default: a new UUID; repeat one to redeliver).",
        ),
    ] = "",
    secret_file: SecretFileOpt = "",
    connect_wait: Annotated[
        float,
        typer.Option(
            min=0.0, metavar="SECONDS", help="Retry a receiver that is not listening yet."
        ),
    ] = 10.0,
    as_json: JsonOpt = False,
) -> None:
    """Send one signed GitHub webhook delivery to a receiver, as GitHub would (offline).

    Builds an issues or issue_comment payload in GitHub's documented shape (or sends
    --payload FILE), signs it with the webhook's secret (--secret-file or
    $AGENTSESSIONS_GITHUB_SECRET) and prints the receiver's answer. Exit 0 when it
    answered 2xx, else 12.
    """
    state = command_state(ctx, as_json)
    from agentsessions.producers import send as sender

    data: dict[str, object] | bytes
    if payload:
        try:
            data = Path(payload).expanduser().read_bytes()
        except OSError as exc:
            raise InvalidArgumentError(
                f"cannot read --payload {payload!r}: {exc.strerror}"
            ) from None
    elif comment:
        data = sender.comment_event(issue, author=author, body=comment)
    elif title:
        data, event = sender.issue_event(issue, author=author, title=title, body=body), "issues"
    else:
        raise InvalidArgumentError(
            "say what to send: --comment TEXT, --title TEXT or --payload FILE"
        )
    sent = sender.deliver(
        url, event, data, _secret(secret_file), delivery_id=delivery, connect_wait=connect_wait
    )
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


def _summary(answer: dict[str, object]) -> str:
    if answer.get("status") == "recorded":
        return f"recorded in {answer.get('session')} at seq {answer.get('seq')}"
    if answer.get("status") == "ignored":
        return f"ignored: {answer.get('reason')}"
    return str(answer.get("error") or answer.get("status") or answer)

"""The options of the ``produce`` commands, and where their secrets come from.

Each is an ``Annotated`` type a command's signature names (the help text is written once).
A secret (the webhook's, a reply token) is read from a file or an environment variable,
never from a flag's value: a command line is visible to every user of the machine.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated

import typer

from agentsessions.cli.options import MODEL_SPEC_HELP
from agentsessions.errors import InvalidArgumentError

if TYPE_CHECKING:
    from agentsessions.producers.sinks import ReplySink

SECRET_ENV = "AGENTSESSIONS_GITHUB_SECRET"
TOKEN_ENV = "AGENTSESSIONS_GITHUB_TOKEN"
DEFAULT_LISTEN = "127.0.0.1:8090"
EDIT_POLICIES = ("reply", "quiet", "ignore")

SecretFileOpt = Annotated[
    str,
    typer.Option(
        "--secret-file",
        metavar="FILE",
        help=f"The webhook's secret (the file's text, one trailing newline dropped); "
        f"else ${SECRET_ENV}.",
    ),
]
ListenOpt = Annotated[
    str,
    typer.Option(
        metavar="HOST:PORT|unix:///PATH",
        help="Where to receive webhooks (port 0: any free port; the first line says which).",
    ),
]
HarnessOpt = Annotated[
    str,
    typer.Option(
        metavar="NAME",
        help="Harness of the turns: chat (calls --model with the issue's conversation) or "
        "any registered harness.",
    ),
]
ModelOpt = Annotated[
    str, typer.Option(metavar="SPEC", help=f"Model of new sessions. {MODEL_SPEC_HELP}")
]
ReplyOpt = Annotated[
    str,
    typer.Option(
        metavar="print|file:PATH|github|URL",
        help="Where answers go: printed on stdout, appended to PATH as JSON lines, "
        "posted as an issue comment through GitHub's API (needs a token), or POSTed as "
        '{"body": TEXT} to URL (it may name {owner}, {repo} and {number}).',
    ),
]
ReplyTokenFileOpt = Annotated[
    str,
    typer.Option(
        metavar="FILE",
        help=f"Bearer token for --reply github or URL (the file's text); else ${TOKEN_ENV}.",
    ),
]
BotOpt = Annotated[
    list[str] | None,
    typer.Option(
        metavar="LOGIN",
        help="The agent's own GitHub login (repeatable): its events are never turns. "
        "Accounts GitHub marks as bots are never answered either.",
    ),
]
OnEditOpt = Annotated[
    str,
    typer.Option(
        metavar="reply|quiet|ignore",
        help="An edited or deleted issue or comment: recorded as an input of its own and "
        "answered (reply), recorded with its answer kept in the journal only (quiet), "
        "or not recorded (ignore).",
    ),
]
TurnWaitOpt = Annotated[
    float,
    typer.Option(
        min=0.0,
        metavar="SECONDS",
        help="How long a turn waits for a session another process is writing.",
    ),
]

ReceiverArg = Annotated[
    str,
    typer.Argument(
        metavar="URL", help="The receiver: HOST:PORT, http://HOST:PORT/PATH or unix:///PATH."
    ),
]
IssueOpt = Annotated[
    str, typer.Option(metavar="OWNER/REPO#N", help="The issue the event is about.")
]
AuthorOpt = Annotated[str, typer.Option(metavar="LOGIN", help="Who wrote it.")]
CommentOpt = Annotated[
    str, typer.Option(metavar="TEXT", help="Send an issue_comment 'created' with TEXT.")
]
TitleOpt = Annotated[
    str, typer.Option(metavar="TEXT", help="Send an issues 'opened' with this title.")
]
BodyOpt = Annotated[str, typer.Option(metavar="TEXT", help="The opened issue's body.")]
PayloadOpt = Annotated[
    str,
    typer.Option(
        metavar="FILE", help="Send this JSON payload as is (a recorded delivery; with --event)."
    ),
]
EventOpt = Annotated[str, typer.Option(metavar="NAME", help="X-GitHub-Event of --payload.")]
DeliveryOpt = Annotated[
    str,
    typer.Option(
        metavar="ID", help="X-GitHub-Delivery (default: a new UUID; repeat one to redeliver)."
    ),
]
ConnectWaitOpt = Annotated[
    float,
    typer.Option(min=0.0, metavar="SECONDS", help="Retry a receiver that is not listening yet."),
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


def webhook_secret(path: str) -> bytes:
    """The webhook's secret (``--secret-file``, else the environment); refused if none."""
    secret = read_secret(path, SECRET_ENV, "webhook secret")
    if not secret:
        raise InvalidArgumentError(
            "no webhook secret: every delivery must be signed with it",
            hint=f"--secret-file FILE, or ${SECRET_ENV} (the secret set on GitHub's webhook)",
        )
    return secret.encode("utf-8")


def check_on_edit(value: str) -> str:
    """``--on-edit``'s value if it is one of :data:`EDIT_POLICIES`."""
    if value not in EDIT_POLICIES:
        raise InvalidArgumentError(f"invalid --on-edit {value!r}: expected reply, quiet or ignore")
    return value


def reply_sink(
    spec: str, *, token: str = "", stream: IO[str] | None = None, as_json: bool = False
) -> ReplySink:
    """The sink ``--reply`` names: ``print``, ``file:PATH``, ``github`` (the REST API, with
    ``token``), or an ``http(s)://`` URL template."""
    from agentsessions.producers import sinks

    if spec == "print":
        return sinks.PrintSink(stream, as_json=as_json)
    if spec.startswith("file:") and len(spec) > 5:
        return sinks.FileSink(Path(spec[5:]).expanduser())
    if spec == "github":
        if not token:
            raise InvalidArgumentError(
                "--reply github needs a token with write access to issues",
                hint=f"--reply-token-file FILE, or ${TOKEN_ENV}",
            )
        return sinks.PostSink(sinks.GITHUB_COMMENTS_URL, token=token)
    if spec.startswith(("http://", "https://")):
        return sinks.PostSink(spec, token=token)
    raise InvalidArgumentError(
        f"invalid --reply {spec!r}: expected print, file:PATH, github or an http(s):// URL"
    )

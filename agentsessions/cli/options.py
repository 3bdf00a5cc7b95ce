"""The options and arguments several commands share, and the parsing of their values.

Each is an ``Annotated`` type a command's signature names (the help text is written once);
the checks run before anything is opened (:mod:`.parsing`): a session id or project name is
validated before the file system is touched, a ``KEY=VALUE`` list before any engine starts.
"""

from __future__ import annotations

from typing import Annotated

import typer

from agentsessions.cli.parsing import parse_pairs as parse_pairs  # re-exported
from agentsessions.cli.parsing import project_name as project_name  # re-exported
from agentsessions.cli.parsing import session_uid as session_uid  # re-exported
from agentsessions.cli.provenance import IDENTITY_HELP, ORIGIN_HELP
from agentsessions.sessions.defaults import DEFAULT_RUNTIME as DEFAULT_RUNTIME  # re-exported

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


OriginOpt = Annotated[str, typer.Option(metavar="FIELDS", help=ORIGIN_HELP)]
IdentityOpt = Annotated[
    str,
    typer.Option(
        metavar="FIELDS",
        help=f"Who creates the session, kept with it: {IDENTITY_HELP}.",
    ),
]
HarnessOpt = Annotated[
    str,
    typer.Option(
        metavar="NAME",
        help="Harness to drive the turn (echo, chat, counter, memory or a plugin; default: the "
        "session's harness, else echo).",
    ),
]
RuntimeOpt = Annotated[
    str,
    typer.Option(
        metavar="NAME",
        help="Runtime hosting the harness: auto (default: warm for a harness whose memory is "
        "its state, such as counter; local otherwise), local (in-process, no memory "
        "snapshots) or warm (detached host processes whose memory survives suspend/resume).",
    ),
]
WaitOpt = Annotated[
    float,
    typer.Option(
        "--wait",
        min=0.0,
        metavar="SECONDS",
        help="Wait up to SECONDS for a busy session instead of failing at once (exit 6).",
    ),
]

"""The command line starts light: what ``--help``, ``list``, ``get`` and a one-turn ``exec``
import, never how long they take.

Each case starts a real interpreter with ``-X importtime`` (the same start a user pays) and
reads the names of the modules it imported from stderr. Two checks, so that the next
regression fails here instead of in a later measurement:

- a heavy module on a path that does not need it fails (the ``*_NEVER`` lists: typer for
  ``list``, ``get`` and a plain ``exec`` (cli.fast parses them), the controller
  for ``list``, the journal for ``--help``, typer for the root ``--help`` page, the
  package-metadata scan for either, typer's markdown-and-pygments help renderer for any help
  page, rich or the schema's validators for
  a ``list`` or ``get`` written to a pipe, the OpenAI provider's http/ssl/email for an echo
  turn, gRPC for anything local);
- every module of the project a command imports must be one that ``startup_modules.json``
  pins for it: a new import on a start path is a choice, made by adding its name there (a
  command that imports fewer passes; tighten the file when it does).

The figures themselves live in ``bench/startup.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import Cli, clean_env

HELP_NEVER = (
    "msgspec",
    "sqlite3",
    "agentsessions.journal",
    "agentsessions.controller",
    "agentsessions.sessions.local",
    "agentsessions.runtimes",
    "agentsessions.models",
    "typer.rich_utils",  # imports rich.markdown, rich.syntax, rich.traceback: cli.helpview
    "rich.markdown",
    "markdown_it",
    "pygments",
    "rich.traceback",
    "grpc",  # gRPC only when a gRPC feature is used (docs/WIRE.md)
    "google.protobuf",
    "agentsessions.server",
    "importlib.metadata",
    "http.client",
    "ssl",
    "email",
    "agentsessions.v1",
)
"""--help only parses and prints: no store, no schema, no controller, no runtime, and the
page is drawn on rich's core (no markdown parser, no syntax highlighter)."""

LIST_NEVER = (
    "typer",  # read against its generated option table (cli.fast, cli.fastparse)
    "importlib.metadata",  # the harness registry scans entry points only to resolve a harness
    "agentsessions.controller.controller",
    "agentsessions.controller.rules",  # its SPI costs ~6 ms: a turn's defaults, not a list's
    "agentsessions.controller.spi",
    "agentsessions.runtimes",
    "agentsessions.models",
    "harnesses",
    "agentsessions.v1.schema",  # the validators build at import: only a commit needs them
    "rich",  # a page to a pipe is padded columns (sessionview.plain_page)
    "typer.rich_utils",
    "grpc",
    "google.protobuf",
    "agentsessions.server",
    "cryptography",  # only with a master key configured (encryption at rest)
    "http.client",
    "ssl",
    "email",
    "agentsessions.v1.schemagen",
    "agentsessions.sessions.local",  # the engine: a local list opens the store's listing alone
    "agentsessions.sessions.values",  # a turn's values (list's own: sessions.session)
    "agentsessions.journal.stores.file.store",  # only for a row its TAIL hint cannot vouch for
    "agentsessions.journal.format.segmentlog",  # no journal is opened: a hint is checked
    "agentsessions.journal.format.segment",  # against the journal's directory (format.logend)
    "agentsessions.journal.format.segmentread",
    "msgspec",  # ~1x python -c pass to import: session.json is decoded by strictjson
    "agentsessions.journal.format.canonical",  # it loads msgspec: only a commit needs it
    "agentsessions.journal.crypto.cipher",  # no record is sealed or opened (crypto.configured)
    "agentsessions.v1.provenance",  # only an --origin is parsed with it
    "dataclasses",  # its import (inspect, ast, dis) and a compile per method: valueclass
    "inspect",
)
"""list is parsed without typer, reads the catalog and renders: it opens no engine (the file
store's listing alone: sessions.listing), builds no controller, looks up no harness, opens
no journal, builds no schema and, to a pipe, draws no rich table."""

GET_NEVER = (
    "typer", "agentsessions.v1.schema", "rich", "typer.rich_utils", "grpc", "google.protobuf",
    "cryptography", "agentsessions.controller.controller", "agentsessions.runtimes.warm",
    "agentsessions.models", "http.client", "ssl", "agentsessions.server",
    "importlib.metadata",  # a shipped harness resolves by its module, no metadata scan
    "dataclasses",  # value classes are made by agentsessions.valueclass
    "sqlite3", "agentsessions.journal.stores.file.catalog",  # opened on first use: get never
)  # fmt: skip
"""get is parsed without typer and reads one session: no schema and, to a pipe, no rich
(sessionview.plain_details); its memory probe describes the harness, and builds no
controller or warm runtime for it."""

EXEC_NEVER = (
    "typer",  # a plain exec is read against its generated option table (cli.fast)
    "dataclasses",  # value classes are made by agentsessions.valueclass (inspect: msgspec's)
    "agentsessions.models.openai",  # an echo turn opens no socket: no http.client, ssl, email
    "http.client",
    "ssl",
    "agentsessions.v1.schemagen",  # the checkers load from the generated v1.gen.schemafast
    "rich",  # to a pipe, records are plain lines
    "typer.rich_utils",
    "grpc",
    "google.protobuf",
    "agentsessions.server",
    "agentsessions.client",
    "agentsessions.integrations",
    "cryptography",
    "importlib.metadata",  # a shipped harness resolves by its module, no metadata scan
    "agentsessions.runtimes.warm",  # auto makes it for a memory harness (warm_settings)
    "agentsessions.runtimes.warm_wire",
    "agentsessions.runtimes.warm_launch",
    "agentsessions.tools.appendline",  # an executor's module loads when a workload names it
    "agentsessions.tools.unixsock",
    "socket",  # the LOCK's holder names its host by os.uname (journal.format.lock)
    "secrets",  # temporary names and ids from os.urandom, as store.new_uid makes them
    "random",  # only the crash simulator's rng type (journal.format.durable)
    "sqlite3",  # the listing catalog opens on first use: a turn never asks it
    "agentsessions.journal.stores.file.catalog",
)
"""A one-turn exec on the echo harness: the store, the schema, the controller, the echo
harness and model, drawn as plain lines; nothing remote, no other provider, no rich, no
warm runtime, no tool executor, no socket, no secrets or random, no catalog (sqlite3)."""

PINNED: dict[str, list[str]] = json.loads(
    Path(__file__).with_name("startup_modules.json").read_text(encoding="utf-8")
)
"""Command -> the project's modules (``agentsessions.*``, ``harnesses.*``) it may import."""


def imported(args: list[str], cwd: Path, *, pipe: bool = False) -> set[str]:
    """The modules a fresh ``python -m agentsessions ARGS`` imports (it must exit 0).

    ``pipe``: stdout is a pipe and COLUMNS unset, as in ``agentsessions list | grep x``
    (clean_env sets COLUMNS, which asks for rich's layout)."""
    env = clean_env()
    if pipe:
        del env["COLUMNS"]
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "agentsessions", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert "agentsessions.cli.app" in names  # the parse saw real -X importtime output
    return names


def heavy(names: set[str], never: tuple[str, ...]) -> list[str]:
    """The names in ``names`` that are, or live under, one of ``never``."""
    return sorted(n for n in names if any(n == p or n.startswith(p + ".") for p in never))


def unpinned(names: set[str], command: str) -> list[str]:
    """The project's modules in ``names`` that startup_modules.json does not pin for
    ``command`` (to be added there, if the new import is meant)."""
    ours = {n for n in names if n.split(".")[0] in ("agentsessions", "harnesses")}
    return sorted(ours - set(PINNED[command]))


ROOT_HELP_NEVER = (
    *HELP_NEVER,
    "typer",  # the page is drawn from generated values (cli.fast, cli.gen.roothelp)
    "agentsessions.cli.root",
    "agentsessions.cli.helpview",
    "agentsessions.cli.context",
    "agentsessions.sessions",
    "rich",  # to a pipe the page is laid out as rich would (cli.plainhelp)
    "typing",  # ~0.4x of an installed python -c pass: the page's modules annotate without it
)
"""The root --help page to a pipe: nothing but the page's values and their layout."""
ROOT_HELP_CONSTANTS = {"agentsessions.sessions", "agentsessions.sessions.defaults"}
"""The engine's defaults (a module of constants, under a lazy package) that the package's
``open()`` signature names: cheap, and the one home of those values."""


@pytest.mark.parametrize("args", [["list", "--help"], ["exec", "--help"], []])
def test_help_imports_no_store_schema_or_controller(cli: Cli, args: list[str]) -> None:
    names = imported(["--home", str(cli.home), *args], cli.cwd)
    assert heavy(names, HELP_NEVER) == []
    assert unpinned(names, "--help") == []


@pytest.mark.parametrize("args", [["--help"], ["-h"]])
def test_the_root_help_page_imports_no_typer(cli: Cli, args: list[str]) -> None:
    names = imported(["--home", str(cli.home), *args], cli.cwd)
    assert heavy(names - ROOT_HELP_CONSTANTS, ROOT_HELP_NEVER) == []
    assert unpinned(names, "root --help") == []


def test_list_imports_no_controller_and_scans_no_entry_points(cli: Cli) -> None:
    cli.create("--name", "one")
    names = imported(["--home", str(cli.home), "list"], cli.cwd, pipe=True)
    assert "agentsessions.journal.stores.file.catalog" in names or "sqlite3" in names  # it did list
    assert heavy(names, LIST_NEVER) == []
    assert unpinned(names, "list") == []


def test_list_json_imports_no_controller(cli: Cli) -> None:
    cli.create("--name", "one")
    names = imported(["--home", str(cli.home), "list", "--json"], cli.cwd)
    assert heavy(names, LIST_NEVER) == []
    assert unpinned(names, "list") == []


def test_get_to_a_pipe_imports_no_schema_or_rich(cli: Cli) -> None:
    uid = cli.create("--name", "one")
    names = imported(["--home", str(cli.home), "get", uid], cli.cwd, pipe=True)
    assert "agentsessions.journal.stores.file.store" in names  # it did read the session
    assert heavy(names, GET_NEVER) == []
    assert unpinned(names, "get") == []


def test_a_local_turn_imports_no_grpc_no_other_provider_and_only_what_is_pinned(cli: Cli) -> None:
    uid = cli.create("--name", "one", "--harness", "echo")
    names = imported(["--home", str(cli.home), "exec", uid, "-i", "hello"], cli.cwd, pipe=True)
    assert "agentsessions.controller.controller" in names  # it did run the turn
    assert heavy(names, EXEC_NEVER) == []
    assert unpinned(names, "exec") == []

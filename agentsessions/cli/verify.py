"""``verify``: walk hash chains (a session, every session, or a file anywhere) and report.

A session id, a path (a session directory or an export file, checked offline) or ``--all``;
one line per chain verified, and the first failure's exit code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentsessions.cli import serveropts as so
from agentsessions.cli.context import (
    PROG,
    CliState,
    command_state,
    open_engine,
    open_local_engine,
)
from agentsessions.cli.options import JsonOpt, session_uid
from agentsessions.cli.root import typer_app as app
from agentsessions.errors import InvalidArgumentError

if TYPE_CHECKING:
    from rich.text import Text

    from agentsessions.sessions.values import VerifyReport


def looks_like_path(target: str) -> bool:
    """True if ``target`` names a file system path rather than a session uid."""
    seps = {os.sep, "/"} | ({os.altsep} if os.altsep else set())
    return any(sep in target for sep in seps) or os.path.exists(target)


def _run_verify(
    state: CliState, target: str | None, path: Path | None, all_: bool, strict: bool
) -> list[tuple[str, VerifyReport]]:
    from agentsessions.cli.render import ProgressBar
    from agentsessions.sessions.offline import verify_file

    kf = state.key_file or None  # a sealed export's or a copied directory's records opened
    with ProgressBar("verifying") as progress:
        if path is not None:
            so.require_local(state.server, "verify --path")
            return [(str(path), verify_file(path, strict=strict, progress=progress, key_file=kf))]
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
            return [(target, verify_file(path, strict=strict, progress=progress, key_file=kf))]
        uid = session_uid(target)
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
    state = command_state(ctx, as_json)
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
        print_verify(reports)
    failed = [(label, r) for label, r in reports if not r.ok]
    if failed:
        label, report = failed[0]
        where = f" at seq {report.first_bad_seq}" if report.first_bad_seq is not None else ""
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        sys.stderr.write(
            render.error_text(f"{label} does not verify{where}: {report.reason}{more}")
        )
        raise typer.Exit(report.exit_code)


def verify_line(report: VerifyReport, label: str) -> Text:
    """One line per verified chain: a check mark and the head, or a cross and the first bad seq."""
    from rich.text import Text

    from agentsessions.cli.render import one_line

    if report.ok:
        head = report.last_hash[:16] or "-"
        line = Text.assemble(("✓ ", "green"))
        noun = "record" if report.records == 1 else "records"
        line.append(one_line(f"{label}: {report.records} {noun} verified"))
        line.append(f", last seq {report.last_seq}")
        line.append(f", head {head}")
        if any("content hashes not recomputed" in note for note in report.notes):
            line.append(" (encrypted, checked without the key: content hashes not recomputed)")
        if report.torn_tail:
            line.append(" (a torn, unacknowledged tail was ignored)")
        return line
    line = Text.assemble(("✗ ", "bold red"))
    where = f" at seq {report.first_bad_seq}" if report.first_bad_seq is not None else ""
    line.append(one_line(f"{label}: FAILED{where}: {report.reason}"))
    return line


def print_verify(reports: Sequence[tuple[str, VerifyReport]]) -> None:
    """Print one verify line per (label, report)."""
    from rich.text import Text

    from agentsessions.cli.render import stdout_console

    console = stdout_console()
    if not reports:
        console.print(Text("no sessions to verify"))
    for label, report in reports:
        console.print(verify_line(report, label), soft_wrap=True)
        for name, part in report.components:  # the session's tool stores, one line each
            console.print(verify_line(part, f"{label} tool store {name}"), soft_wrap=True)

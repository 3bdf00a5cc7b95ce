"""``export``: one session to a portable, self-verifying file."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from agentsessions.cli.context import command_state, open_engine
from agentsessions.cli.options import JsonOpt, SessionArg, session_uid
from agentsessions.cli.root import typer_app as app
from agentsessions.cli.storeopts import CiphertextOpt, DecryptOpt, export_choice
from agentsessions.errors import InvalidArgumentError, StorageError


@app.command(epilog="Example: agentsessions export sess-0123456789abcdef01234567 -o triage.agx")
def export(
    ctx: typer.Context,
    session: SessionArg,
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE", help="File to write.")],
    no_compress: Annotated[
        bool, typer.Option("--no-compress", help="Write plain JSON lines instead of zstd.")
    ] = False,
    force: Annotated[bool, typer.Option(help="Overwrite FILE if it exists.")] = False,
    decrypt: DecryptOpt = False,
    ciphertext: CiphertextOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Write a session to one portable, self-verifying file (metadata plus records).

    The file is zstd-compressed unless --no-compress; `verify FILE` checks it anywhere. An
    encrypted session needs a choice: --decrypt or --ciphertext (else exit 2).
    """
    from agentsessions.cli import render

    state = command_state(ctx, as_json)
    uid = session_uid(session)
    choice = export_choice(state.server, decrypt, ciphertext)
    if output.exists() and not force and not in_place(output):  # /dev/stdout: written in place
        raise InvalidArgumentError(f"{output} already exists", hint="pass --force to overwrite it")
    try:
        with open_engine(state, read=True) as engine, render.ProgressBar("exporting") as progress:
            exporter: Any = engine  # both engines take overwrite; the Protocol does not
            summary = exporter.export(
                uid, output, compress=not no_compress, progress=progress, overwrite=force, **choice
            )
    except StorageError as exc:
        if isinstance(exc.__cause__, BrokenPipeError):
            return  # `export -o /dev/stdout | head`: the reader hung up; end quietly
        raise
    # exporting to /dev/stdout: the file is the output, so the summary goes to stderr
    with contextlib.redirect_stdout(sys.stderr) if in_place(output) else contextlib.nullcontext():
        if state.json:
            render.write_json(summary)
        else:
            print_export(summary)


def in_place(path: Path) -> bool:
    """True if ``path`` is a device, pipe or socket (``-o /dev/stdout``): the export writes
    it in place, so that it exists is no reason to refuse, and the summary goes to stderr."""
    return path.is_char_device() or path.is_block_device() or path.is_fifo() or path.is_socket()


def print_export(summary: Mapping[str, Any]) -> None:
    """Print ``export``'s one-line summary: records, head, file and whether it is compressed."""
    from rich.text import Text

    from agentsessions.cli.render import one_line, stdout_console

    kind = "zstd" if summary.get("compressed") else "uncompressed"
    head = str(summary.get("last_hash", ""))[:16] or "-"
    line = (
        f"exported {summary.get('uid')}: {summary.get('records')} records, last seq "
        f"{summary.get('last_seq')}, head {head} -> {summary.get('path')} ({kind})"
    )
    stdout_console().print(Text(one_line(line)), soft_wrap=True)

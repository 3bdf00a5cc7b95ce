"""What ``exec`` does once its command line is parsed, by typer (:mod:`.exec`) or by
:mod:`.fast`: the one body of the command, so the two parsers cannot run different turns.

Imports no typer (an exec :mod:`.fast` answers never loads it); see :mod:`.exec` for the
options' meaning. The checks that need no store run before the home is opened.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentsessions.cli.context import CliState, open_engine
from agentsessions.cli.parsing import parse_pairs, session_uid
from agentsessions.cli.provenance import parse_identity, parse_origin
from agentsessions.cli.stream import TurnPrinter
from agentsessions.errors import InvalidArgumentError


def run_exec(
    state: CliState,
    session: str | None,
    inputs: list[str] | None,
    harness: str,
    model: str,
    config: str,
    runtime: str,
    wait: float,
    fresh_start: bool,
    project: str,
    name: str,
    label: list[str] | None,
    tools: str,
    commit_id: str,
    durability: str,
    origin: str,
    identity: str,
    actor: str,
) -> None:
    """Run one turn as ``exec`` does (see :mod:`.exec`) and render it as ``state`` asks."""
    from agentsessions.cli.turnview import finish_turn, watch_turn  # when a turn runs
    from agentsessions.sessions.local import LocalSessions

    # the checks that need no store come first: a refused exec never opens the home
    from agentsessions.v1.turn import TurnRequest

    request = TurnRequest.of(
        session_uid(session) if session is not None else None, _inputs(inputs, actor),
        harness=harness or None, model=model or None, config=read_config(config), wait=wait,
        project=project, name=name, labels=parse_pairs(label or [], "--label"),
        fresh_start=fresh_start, tools=tools or None, commit_id=commit_id or None,
        durability=durability or None, origin=parse_origin(origin),
        identity=parse_identity(identity),
    )  # fmt: skip
    uid = request.uid
    printer = TurnPrinter(state.json)
    LocalSessions.check_request(request)
    with open_engine(state, runtime) as engine:
        frames = engine.exec(request)
        last, interrupted = watch_turn(state, printer, engine, uid, frames, waking=not fresh_start)
    assert last.turn is not None
    finish_turn(state, printer, last.turn, interrupted=interrupted)


def read_inputs(values: Sequence[str]) -> list[str]:
    """The turn's input texts: the ``--input`` values, else stdin when it is not a terminal.

    Stdin is one input (one trailing newline dropped); empty stdin means no input.
    """
    if values:
        return [_utf8(value, "--input") for value in values]
    stream = sys.stdin
    if stream is None or stream.closed or stream.isatty():
        return []
    buffer = getattr(stream, "buffer", None)
    # the bytes, decoded strictly: a text stream may decode with surrogateescape and hand
    # over lone surrogates that only fail later, deep in the journal
    raw = buffer.read() if buffer is not None else stream.read().encode("utf-8", "surrogateescape")
    try:
        text = io.StringIO(raw.decode("utf-8"), newline=None).read()  # universal newlines
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(
            f"stdin is not UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start}",
            hint="convert it first, for example with iconv -t UTF-8",
        ) from None
    text = text.removesuffix("\n")
    return [text] if text else []


def _utf8(value: str, flag: str) -> str:
    """``value`` as given on the command line, refused if it is not UTF-8 (the shell passed
    bytes that Python kept as lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(f"{flag} is not UTF-8 text") from None
    return value


def read_config(value: str) -> bytes:
    """``--config`` as bytes, verbatim: the text itself, or the file named by ``@PATH``."""
    if not value.startswith("@"):
        return _utf8(value, "--config").encode("utf-8")
    path = Path(value[1:]).expanduser()
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InvalidArgumentError(
            f"cannot read --config file {str(path)!r}: {exc.strerror or exc}"
        ) from None


def _inputs(inputs: list[str] | None, actor: str) -> list[Any]:
    """The turn's inputs (``--input`` texts, else stdin), each authored by ``--actor``."""
    from agentsessions.v1.provenance import Authored

    texts = read_inputs(inputs or [])
    author = parse_identity(actor, "--actor")
    return [Authored(t, author) for t in texts] if author else list(texts)

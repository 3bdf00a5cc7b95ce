"""agentsessions: durable AI-agent sessions on an append-only, hash-chained event journal.

The layers, lowest first. A package imports only the packages on the lines above its own
(tests/unit/test_import_graph.py reads this map and holds every import to it; every package
docstring states its place by this map, not another)::

    errors  telemetry  valueclass           the exception tree, tracing, value classes: no imports
    v1                                      the vocabulary: messages, events, ids
    journal                                 storage: format <- crypto <- stores <- tools
    controller                              the single writer: exec, replay, resume, fork
    models  tools  runtimes                 what a turn calls: models, tool executors, compute
    sessions                                the Sessions API, the one way in for front ends
    wire                                    the gRPC wire (runtimes dial harnesses through it)
    cli  server  client  integrations  producers    the front ends (cli may import the others)

``harnesses/`` (outside the package) speak ``v1`` and are found by name; the package never
imports them.

The library's way in is :func:`open`, which returns a :class:`~agentsessions.sessions.Sessions`
engine (see the guide's docs/howto/library.md). Nothing heavy is imported here.
"""

from __future__ import annotations

import os

from agentsessions.sessions.defaults import DEFAULT_RUNTIME  # a constant: nothing heavy

TYPE_CHECKING = False  # not typing's: importing typing costs a bare --help ~3 ms

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from agentsessions.journal.stores.store import Store
    from agentsessions.sessions.api import Sessions
    from agentsessions.sessions.values import Session

__version__ = "0.1.0"

__all__ = ["Session", "Sessions", "__version__", "open"]


def open(  # the library's entry point: ``agentsessions.open``
    home: str | os.PathLike[str] | None = None,
    *,
    store: Store | None = None,
    runtime: str = DEFAULT_RUNTIME,
    model: str | None = None,
    key_file: str | None = None,
    models: Mapping[str, str] | None = None,
    durability: str = "",
) -> Sessions:
    """A ready :class:`Sessions` engine: on ``store``, else the file store under ``home``.

    ``home`` resolves as the CLI's ``--home`` does (then ``AGENTSESSIONS_HOME``, then the
    per-user data directory). ``runtime`` hosts harnesses (auto, local, warm); ``model`` is
    the default model of new sessions (else echo). Use it as a context manager: leaving it
    waits for running turns and closes the store it opened. Thread-safe.
    ``key_file``: the master key of encryption at rest (else ``AGENTSESSIONS_KEY_FILE``,
    else ``AGENTSESSIONS_MASTER_KEY``): new sessions are encrypted, encrypted ones read.
    ``models``: a model catalog, NAME -> SPEC (``--model NAME`` then means SPEC; the config
    file's ``[models.NAME]`` tables too): sessions record the NAME. ``durability``: the
    turns' durability mode unless a turn names its own, ``step`` (the default: a turn's
    input is durable at once) or ``turn`` (one sync per turn that calls no tool, at its
    END; docs/concepts/durability.md says what each promises after a crash).
    """
    from agentsessions.sessions.local import open_local

    return open_local(
        home,
        store=store,
        runtime=runtime,
        model=model,
        key_file=key_file,
        models=models,
        durability=durability,
    )


def __getattr__(name: str) -> Any:
    if name == "Sessions":
        from agentsessions.sessions import api

        return api.Sessions
    if name == "Session":
        from agentsessions.sessions import session

        return session.Session
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

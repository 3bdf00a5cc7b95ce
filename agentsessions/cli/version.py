"""``agentsessions --version`` (``-V``): the version line, or with ``--json`` one JSON object.

The JSON object (``name``, ``version``, ``python``) is part of the ``--json`` contract: its
keys only grow.
"""

from __future__ import annotations

import platform
import sys
from typing import NoReturn

import typer

from agentsessions import __version__

PROG = "agentsessions"


def print_version(as_json: bool) -> NoReturn:
    """Print the version (``as_json``: one JSON object) and exit 0."""
    if as_json:
        from agentsessions.cli.render import write_json

        write_json({"name": PROG, "version": __version__, "python": platform.python_version()})
    else:
        sys.stdout.write(f"{PROG} {__version__}\n")
    raise typer.Exit(0)

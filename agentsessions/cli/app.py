"""The ``agentsessions`` entry point: the fast path for the pages and commands it knows, the
typer root (:mod:`.root`) for everything else.

The console script and ``python -m agentsessions`` import this module first, so it imports
nothing heavy: :func:`main` asks :mod:`.fast` to answer the command line without typer (the
root ``--help`` page) and hands every other command line to :func:`.root.root_command`.
Other names (``app``, ``root_command``, ``AgentSessionsGroup``...) are :mod:`.root`'s,
loaded on first use; ``app`` is the root with every command registered (:func:`.root.load_all`).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: importing typing costs a bare --help ~3 ms
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

PROG = "agentsessions"
"""The program's name (:data:`.context.PROG`, repeated here so that the entry imports no
option module)."""


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: run the CLI and exit with its status."""
    from agentsessions.cli.fast import answer

    code = answer(list(sys.argv[1:] if argv is None else argv))
    if code is not None:
        sys.exit(code)
    from agentsessions.cli.root import root_command

    root_command()(args=argv, prog_name=PROG)


def __getattr__(name: str) -> Any:
    """:mod:`.root`'s names, loaded on first use; ``app`` with every command registered."""
    if name.startswith("__"):  # the import system's probes (``__path__``): not ours
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from agentsessions.cli import root

    if name == "app":
        return root.load_all()
    try:
        return getattr(root, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None

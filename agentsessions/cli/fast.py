"""Command lines answered without typer: the root ``--help`` page.

typer costs about 2.5x the CPU of ``python -c pass`` to import before it parses a word,
which is most of what ``agentsessions --help`` costs. :func:`answer` recognises the few
command lines whose outcome is known without typer's parser and answers them itself; any
other command line (an unknown shape, an option it does not know, a shell completion
request) goes to typer unchanged, so a fast answer is never a different answer.

Invariants: a shape answered here is answered exactly as typer answers it (same bytes, same
exit status: tests/unit/test_fasthelp.py); importing this module imports nothing.
"""

from __future__ import annotations

import os

HELP_FLAGS = ("--help", "-h")
"""The root's help options."""
COMPLETE_VAR = "_AGENTSESSIONS_COMPLETE"
"""Set by a shell asking typer to complete a word: typer's to answer."""


def is_root_help(argv: list[str]) -> bool:
    """True for ``--help`` (or ``-h``) alone, or after ``--home DIR`` / ``--home=DIR``:
    the root page, whatever the home (help is eager: the home is not even checked)."""
    if not argv or argv[-1] not in HELP_FLAGS:
        return False
    head = argv[:-1]
    if not head:
        return True
    if len(head) == 1:
        return head[0].startswith("--home=")
    # a value starting with "-" is an option typer would parse, or refuse: its to answer
    return len(head) == 2 and head[0] == "--home" and not head[1].startswith("-")


def answer(argv: list[str]) -> int | None:
    """Answer ``argv`` and return the exit status, or None when typer must parse it."""
    if os.environ.get(COMPLETE_VAR) or not is_root_help(argv):
        return None
    from agentsessions.cli.fasthelp import print_root_help
    from agentsessions.cli.stream import guarded

    with guarded() as output:  # as the root command runs: a closed stdout fails nothing
        print_root_help()
        print()  # click echoes the (empty) formatter text after the page: one more newline
        return output.exit_code(0)

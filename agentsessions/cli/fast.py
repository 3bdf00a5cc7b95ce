"""Command lines answered without typer: the root ``--help`` page, ``list``, ``get`` and
``exec``.

typer costs about 2.5x the CPU of ``python -c pass`` to import before it parses a word,
which is most of what ``agentsessions --help`` costs and a fifth to a quarter of a
command's.
:func:`answer` recognises the few command lines whose outcome is known without typer's
parser and answers them itself: the root page from the values :mod:`.helpgen` wrote out,
the commands of :data:`BODIES` read by :mod:`.fastparse` against the options
:mod:`.parsegen` wrote out from typer's definitions, then run by the same body typer runs
(:mod:`.reading`, :mod:`.execution`) and their
failures reported by the same code (:func:`.failures.reported`). Any other command line (an
unknown shape, an option it does not read, a bad value, ``--help``, a shell completion
request) goes to typer unchanged, so a fast answer is never a different answer.

Invariants: a shape answered here is answered exactly as typer answers it (same bytes, same
exit status: tests/unit/test_fasthelp.py, tests/unit/test_fastcommands.py); importing this
module imports nothing.

A command read here runs with the cycle collector's youngest generation raised to
:data:`GC_GEN0` objects, and the caller's thresholds are put back when it returns (a
command line left to typer runs with them). Importing what a command needs creates ~30,000
objects that live as long as the process; at the default threshold of 700 the collector
walked them ~40 times in a one-turn ``exec``, ~4 ms (a quarter of ``python -c pass``)
spent finding that modules, classes and functions are alive. Only cyclic garbage waits
longer to be freed, and never more than that many objects.
"""

from __future__ import annotations

import gc
import os

HELP_FLAGS = ("--help", "-h")
"""The root's help options."""
COMPLETE_VAR = "_AGENTSESSIONS_COMPLETE"
"""Set by a shell asking typer to complete a word: typer's to answer."""
GC_GEN0 = 50_000
"""The youngest generation's threshold while a command read here runs (module docstring):
above what a one-turn ``exec`` allocates (~30,000), so its start triggers no collection,
and the bound on the cyclic garbage a long command leaves for later."""
BODIES = {
    "list": ("reading", "list_sessions"),
    "get": ("reading", "get_session"),
    "exec": ("execution", "run_exec"),
}
"""The commands answered here (:data:`.parsegen.FAST_COMMANDS`): the module of
``agentsessions.cli`` and its function that does each, as typer's command does."""


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
    if os.environ.get(COMPLETE_VAR):
        return None
    if not is_root_help(argv):
        return run_command(argv)
    from agentsessions.cli.fasthelp import print_root_help
    from agentsessions.cli.stream import guarded

    with guarded() as output:  # as the root command runs: a closed stdout fails nothing
        print_root_help()
        print()  # click echoes the (empty) formatter text after the page: one more newline
        return output.exit_code(0)


def run_command(argv: list[str]) -> int | None:
    """Run the command ``argv`` names as the root command would (the root's checks, then
    the command's body; every failure one line and its exit code), or None when
    :mod:`.fastparse` leaves it to typer; with fewer collections (:data:`GC_GEN0`)."""
    thresholds = gc.get_threshold()
    gc.set_threshold(GC_GEN0, *thresholds[1:])
    try:
        return _run_command(argv)
    finally:
        gc.set_threshold(*thresholds)


def _run_command(argv: list[str]) -> int | None:
    from agentsessions.cli.fastparse import parse

    parsed = parse(argv)
    if parsed is None:
        return None
    from importlib import import_module

    from agentsessions.cli import failures
    from agentsessions.cli.context import CliState, CommandExit, start_command
    from agentsessions.cli.gen.commandline import COMMAND_NAMES
    from agentsessions.cli.stream import guarded
    from agentsessions.errors import AgentSessionsError

    values = dict(parsed.values)
    own_json = values.pop("as_json")
    state = CliState()
    with guarded() as output:  # as the root command runs: a closed stdout fails nothing
        try:  # in the order typer runs them: the root's callback, then the command
            start_command(state, parsed.home, parsed.home_typed, COMMAND_NAMES, parsed.command)
            state.json = state.json or parsed.as_json
            state.json = state.json or own_json  # the command's own --json (command_state)
            module, function = BODIES[parsed.command]
            getattr(import_module(f"agentsessions.cli.{module}"), function)(state, **values)
            code = 0
        except KeyboardInterrupt:
            code = failures.interrupted()
        except CommandExit as exc:  # the command said its exit status (cli.turnview)
            code = exc.code
        except (AgentSessionsError, ModuleNotFoundError, OSError) as exc:
            code = failures.reported(exc, state)
        return output.exit_code(code)

"""The root ``--help`` page without typer: drawn from the values :mod:`.helpgen` wrote out.

The page is typer's, byte for byte (tests/unit/test_fasthelp.py draws both), but costs
no typer import and no command built: only rich's core and the values of
:mod:`.gen.roothelp`.
"""

from __future__ import annotations


def print_root_help() -> None:
    """Print the root command's help page on stdout, as ``agentsessions --help`` does."""
    from agentsessions.cli import helpdraw
    from agentsessions.cli.gen import roothelp as values

    helpdraw.page(
        values.USAGE,
        values.HELP,
        values.DEPRECATED,
        values.OPTION_PANELS,
        values.COMMAND_PANELS,
        values.EPILOG,
    )

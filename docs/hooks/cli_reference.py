"""MkDocs hook: the CLI reference page is each command's own ``--help``, rendered at build.

The marker ``<!-- cli-reference -->`` in ``reference/cli.md`` becomes one section per command
(groups recurse), each the text typer prints for ``agentsessions ... --help`` at 100 columns
without colour: the reference is generated from the commands, so it cannot drift.
"""

from __future__ import annotations

from typing import Any

MARKER = "<!-- cli-reference -->"


def _help(args: list[str]) -> str:
    from typer.testing import CliRunner

    from agentsessions.cli.app import app

    result = CliRunner().invoke(
        app,
        [*args, "--help"],
        prog_name="agentsessions",
        env={"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"},
    )
    if result.exit_code != 0:
        raise RuntimeError(f"agentsessions {' '.join(args)} --help exited {result.exit_code}")
    return result.output.rstrip()


def _commands(group: Any, path: list[str]) -> list[list[str]]:
    ctx = group.make_context("agentsessions", ["--help"], resilient_parsing=True)
    found: list[list[str]] = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or getattr(command, "hidden", False):
            continue
        found.append([*path, name])
        if hasattr(command, "list_commands"):  # a group: its own subcommands
            found.extend(_commands(command, [*path, name]))
    return found


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Fill the CLI reference page; every other page passes through unchanged."""
    if MARKER not in markdown:
        return markdown
    import typer.main

    from agentsessions.cli.app import app

    sections = ["## agentsessions\n\n```text\n" + _help([]) + "\n```\n"]
    for path in _commands(typer.main.get_command(app), []):
        title = " ".join(["agentsessions", *path])
        sections.append(f"## {title}\n\n```text\n{_help(path)}\n```\n")
    return markdown.replace(MARKER, "\n".join(sections))

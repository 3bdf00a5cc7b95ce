"""Shell completion where the shell cannot be detected from the process tree.

typer asks shellingham which shell runs the command by walking up the process's parents;
a command started by a service manager, a CI runner or a background job (its parent gone)
has no shell above it, and ``--install-completion`` / ``--show-completion`` then fail with
``Shell None is not supported``. :func:`install` makes both fall back to the login shell
the user set, ``$SHELL``, as the shell's own tools do.
"""

from __future__ import annotations

import os
from pathlib import Path

# typer's private completion helpers: this module exists to patch their shell detection
import typer._completion_shared as completion_shared
import typer.completion as typer_completion

detect_shell = completion_shared._get_shell_name
"""typer's own detection (shellingham), which :func:`shell_name` tries first."""


def shell_name() -> str | None:
    """The running shell's name (lowercase), else ``$SHELL``'s, else None."""
    name = detect_shell()
    if name is None:
        name = Path(os.environ.get("SHELL", "")).name.lower() or None
    return name


def install() -> None:
    """Route typer's shell detection through :func:`shell_name` (both modules that use it)."""
    completion_shared._get_shell_name = shell_name
    setattr(typer_completion, "_get_shell_name", shell_name)  # noqa: B010  (imported by name there)

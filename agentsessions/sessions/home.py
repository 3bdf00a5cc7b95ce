"""Where sessions live: ``--home``, else ``AGENTSESSIONS_HOME``, else a per-user dir.

The per-user data directory follows each platform's convention:

- Linux and other Unix: ``$XDG_DATA_HOME/agentsessions`` when ``XDG_DATA_HOME`` is an absolute
  path, else ``~/.local/share/agentsessions``;
- macOS: ``~/Library/Application Support/agentsessions``;
- Windows: ``%LOCALAPPDATA%\\agentsessions``, else ``~\\AppData\\Local\\agentsessions``.

Resolution is pure (environment and platform are parameters) so tests never touch a real home.
A process that opens sessions in a home names itself in the LOCK files it takes there
(:func:`name_process`), so that whoever finds a session busy is told who holds it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath

from agentsessions.errors import InvalidArgumentError, NotFoundError

APP_DIR = "agentsessions"
HOME_ENV = "AGENTSESSIONS_HOME"


def default_home(
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
    user_home: str | None = None,
) -> PurePath:
    """The platform's per-user data directory for agentsessions (not created here)."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    user_home = user_home if user_home is not None else str(Path.home())
    if platform.startswith("win"):
        base = env.get("LOCALAPPDATA", "")
        if base:
            return PureWindowsPath(base, APP_DIR)
        return PureWindowsPath(user_home, "AppData", "Local", APP_DIR)
    if platform == "darwin":
        return PurePosixPath(user_home, "Library", "Application Support", APP_DIR)
    xdg = env.get("XDG_DATA_HOME", "")
    if xdg and PurePosixPath(xdg).is_absolute():
        return PurePosixPath(xdg, APP_DIR)
    return PurePosixPath(user_home, ".local", "share", APP_DIR)


def check_home(value: str, source: str = "home") -> Path:
    """``value`` (as given to ``source``) as a home path; an empty one is refused.

    An empty path would mean the current directory (``Path("")`` is ``.``): the store would
    quietly spread ``sessions/`` and ``catalog.sqlite3`` over wherever the command ran.
    """
    if not value:
        raise InvalidArgumentError(
            f"{source} is empty: it must name the directory that holds the sessions",
            hint=f"set it to a directory, or unset {HOME_ENV} to use the default"
            if source == HOME_ENV
            else "name a directory",
            param=None if source == HOME_ENV else "home",
        )
    return Path(value).expanduser()


def resolve_home(
    explicit: str | os.PathLike[str] | None, env: Mapping[str, str] | None = None
) -> Path:
    """The home to use: ``explicit`` (``--home``), else ``AGENTSESSIONS_HOME``, else the default.

    ``~`` is expanded; the directory is not created here (the store does that on first write).
    An empty ``explicit`` or a set but empty ``AGENTSESSIONS_HOME`` is an InvalidArgumentError
    (exit 2), never the current directory or a silent fall back to the default.
    """
    env = os.environ if env is None else env
    if explicit is not None:
        return check_home(os.fspath(explicit), "home")
    if HOME_ENV in env:
        return check_home(env[HOME_ENV], HOME_ENV)
    return Path(default_home(env))


def require_home(home: Path) -> Path:
    """``home``, which must be an existing directory: a read on a home that does not exist
    says so (NotFoundError, exit 3) rather than create it, as a mistyped ``--home`` would."""
    if not home.is_dir():
        raise NotFoundError(
            f"no sessions home at {home}: the directory does not exist (nothing was created)",
            hint=f"check the home given (else ${HOME_ENV}); a write (create, exec) makes it",
            param="home_missing",
        )
    return home


def name_process(program: str) -> None:
    """Name this process in the LOCK files it takes (a registered verb such as
    ``agentsessions exec``, never user content; else its argv[0] names it)."""
    from agentsessions.journal.format.lock import set_program

    set_program(program)

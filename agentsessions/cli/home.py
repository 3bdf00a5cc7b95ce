"""Where the CLI keeps its sessions: ``--home``, else ``AGENTSESSIONS_HOME``, else a per-user dir.

The per-user data directory follows each platform's convention:

- Linux and other Unix: ``$XDG_DATA_HOME/agentsessions`` when ``XDG_DATA_HOME`` is an absolute
  path, else ``~/.local/share/agentsessions``;
- macOS: ``~/Library/Application Support/agentsessions``;
- Windows: ``%LOCALAPPDATA%\\agentsessions``, else ``~\\AppData\\Local\\agentsessions``.

Resolution is pure (environment and platform are parameters) so tests never touch a real home.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath

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


def resolve_home(
    explicit: str | os.PathLike[str] | None, env: Mapping[str, str] | None = None
) -> Path:
    """The home to use: ``explicit`` (``--home``), else ``AGENTSESSIONS_HOME``, else the default.

    ``~`` is expanded; the directory is not created here (the store does that on first write).
    """
    env = os.environ if env is None else env
    if explicit is not None and str(explicit):
        return Path(explicit).expanduser()
    from_env = env.get(HOME_ENV, "")
    if from_env:
        return Path(from_env).expanduser()
    return Path(default_home(env))

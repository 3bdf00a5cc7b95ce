"""What this machine supports for keeping harness memory: fork, unix sockets, CRIU.

``criu check`` is run for the record only: checkpoint-to-disk is not used (it fails on
this project's kernels); warm snapshots are forked copies of a live host.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
import sys
from typing import Any


def criu_check(binary: str = "criu", timeout: float = 10.0) -> tuple[bool, str]:
    """Run ``criu check``: whether it passes, and its last line of output or the reason."""
    path = shutil.which(binary)
    if path is None:
        return False, f"{binary} is not installed (not on PATH)"
    try:
        done = subprocess.run(
            [path, "check"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"{binary} check did not finish within {timeout:g} s"
    except OSError as exc:
        return False, f"cannot run {path}: {exc}"
    output = (done.stdout + done.stderr).decode("utf-8", "replace").strip().splitlines()
    detail = output[-1] if output else f"exit status {done.returncode}"
    return done.returncode == 0, detail


def criu_available(binary: str = "criu", timeout: float = 10.0) -> bool:
    """True only if ``criu check`` passes here (an absent binary or a failure is False)."""
    return criu_check(binary, timeout)[0]


def probe() -> dict[str, Any]:
    """What this machine supports for keeping harness memory, checked now."""
    criu_ok, criu_detail = criu_check()
    forks = hasattr(os, "fork") and hasattr(socket, "AF_UNIX")
    return {
        "platform": sys.platform,
        "kernel": platform.release(),
        "fork": hasattr(os, "fork"),
        "unix_sockets": hasattr(socket, "AF_UNIX"),
        "warm_snapshots": forks,
        "warm_snapshot_survives_process_exit": forks,
        "warm_snapshot_survives_reboot": False,
        "criu": criu_ok,
        "criu_detail": criu_detail,
        "checkpoint_to_disk": criu_ok,
        "checkpoint_to_disk_used": False,
    }

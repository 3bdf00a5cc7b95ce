"""Running a framework's own test suite against our adapter: the store it runs on, and the
subprocess whose outcome is checked (the same for every framework's suite test)."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

PYTEST = (sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider")


def store_env(store: str, request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """The environment whose engine opens ``store`` (file, encrypted, jetstream), without
    any AGENTSESSIONS_ variable of the calling environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSESSIONS_")}
    if store == "encrypted":
        key = tmp_path / "master.key"
        key.write_text(base64.b64encode(os.urandom(32)).decode())
        key.chmod(0o600)
        env["AGENTSESSIONS_KEY_FILE"] = str(key)
    elif store == "jetstream":
        server = request.getfixturevalue("nats_server")
        tag = uuid.uuid4().hex[:8]
        env["AGENTSESSIONS_STORE"] = server.store_url(stream=f"fw{tag}", prefix=f"fw{tag}")
    return env


def run_suite(args: Sequence[str], cwd: Path, env: dict[str, str], passed: int, made: str) -> None:
    """Run pytest ``args`` in ``cwd``: it must pass, with exactly ``passed`` tests passed, and
    our plugin's summary line ``made`` (e.g. "agentsessions-shim: N sessions") must count
    more than none (proof the framework's tests used ours)."""
    done = subprocess.run(
        [*PYTEST, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    tail = done.stdout[-3000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    found = re.search(r"(\d+) passed", done.stdout)
    assert found is not None and int(found.group(1)) == passed, tail
    count = re.search(re.escape(made).replace("N", r"(\d+)"), done.stdout)
    assert count is not None and int(count.group(1)) > 0, tail

"""A framework's own test suite run against our adapter: fetched (:func:`prepare`) and run
in a checked pytest subprocess (:func:`run_suite`), the same for every framework. The store
it runs on is ``stores.py``'s (:func:`stores.store_environment`).

``prepare(dist, version, sha256, deps)`` downloads ``dist==version`` with ``pip download
--no-binary :all: --no-deps`` (or takes the tarball an environment variable names, for
offline machines), checks it against the pinned sha256, unpacks it under
``~/.cache/agentsessions-tests`` and installs the test dependencies it needs beside it
(``pip install --no-deps --target <root>/_deps``). A file lock makes that safe for parallel
workers; it is done once per pin. The tests are the framework's, never copied here.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

PIP = (sys.executable, "-m", "pip", "--quiet")
PYTEST = (sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider")
CACHE = Path.home() / ".cache" / "agentsessions-tests"


def _sdist(dist: str, version: str, into: Path) -> Path:
    """The sdist the environment names (``AGENTSESSIONS_TEST_<DIST>_SDIST``), else one
    ``pip download`` fetches into ``into``."""
    named = os.environ.get(f"AGENTSESSIONS_TEST_{re.sub(r'[^A-Z0-9]', '_', dist.upper())}_SDIST")
    if named:
        return Path(named)
    pin = f"{dist}=={version}"
    done = subprocess.run(
        [*PIP, "download", "--no-binary", ":all:", "--no-deps", "-d", str(into), pin],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"pip download {pin} failed: {done.stderr}"
    (found,) = into.glob("*.tar.gz")
    return found


def prepare(dist: str, version: str, sha256: str, deps: Sequence[str] = ()) -> Path:
    """The unpacked, checked sdist of ``dist==version`` with ``deps`` beside it (made once)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    root = CACHE / f"{dist}-{version}-{sha256[:12]}"
    with open(str(root) + ".lock", "w") as lock:  # parallel workers make it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / "READY").exists():
            return root
        shutil.rmtree(root, ignore_errors=True)
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            sdist = _sdist(dist, version, Path(tmp))
            digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
            assert digest == sha256, f"{sdist}: sha256 {digest}, expected {sha256}"
            work = Path(tmp) / "unpacked"
            with tarfile.open(sdist) as tar:
                tar.extractall(work, filter="data")
            (top,) = work.iterdir()
            shutil.move(str(top), root)
        if deps:
            install(deps, root / "_deps")
        (root / "READY").write_text("ok\n")
    return root


def install(deps: Sequence[str], target: Path) -> None:
    """``pip install --no-deps --target TARGET DEPS`` (a suite's test dependencies)."""
    done = subprocess.run(
        [*PIP, "install", "--no-deps", "--target", str(target), *deps],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"pip install {deps} failed: {done.stderr}"


def run_suite(args: Sequence[str], cwd: Path, env: dict[str, str], passed: int, made: str) -> None:
    """Run pytest ``args`` in ``cwd``: it must pass, with exactly ``passed`` tests passed, and
    our plugin's summary line ``made`` (e.g. "agentsessions-shim: N sessions") must count
    more than none (proof the framework's tests used ours)."""
    done = subprocess.run(
        [*PYTEST, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )
    tail = done.stdout[-3000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    found = re.search(r"(\d+) passed", done.stdout)
    assert found is not None and int(found.group(1)) == passed, tail
    count = re.search(re.escape(made).replace("N", r"(\d+)"), done.stdout)
    assert count is not None and int(count.group(1)) > 0, tail

"""The stores an adapter's tests run on, and the processes they start (issue 19: every
adapter passes on the file store, encrypted at rest and on JetStream).

``file``: a home of the test's own; ``encrypted``: the same with a new master key;
``jetstream``: a stream and subject prefix of its own on the run's ``nats_server``.
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentsessions.errors import UnavailableError

ROOT = Path(__file__).resolve().parents[2]
STORES = ("file", "encrypted", "jetstream")


def _key(tmp_path: Path) -> str:
    key = tmp_path / "master.key"
    key.write_text(base64.b64encode(os.urandom(32)).decode())
    key.chmod(0o600)
    return str(key)


def _url(request: pytest.FixtureRequest, tag: str) -> str:
    server = request.getfixturevalue("nats_server")
    name = f"{tag}{uuid.uuid4().hex[:8]}"
    return str(server.store_url(stream=name, prefix=name))


def adapter_where(
    store: str, tmp_path: Path, request: pytest.FixtureRequest, *, tag: str
) -> dict[str, Any]:
    """How an adapter opens ``store``: ``where`` (a home or a URL) and ``key_file``."""
    if store == "file":
        return {"where": str(tmp_path / "home")}
    if store == "encrypted":
        return {"where": str(tmp_path / "home"), "key_file": _key(tmp_path)}
    return {"where": _url(request, tag)}


def store_environment(
    store: str, tmp_path: Path, request: pytest.FixtureRequest, *, tag: str
) -> dict[str, str]:
    """The environment of a suite's subprocess that picks the store the engine opens
    (no other ``AGENTSESSIONS_`` variable)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSESSIONS_")}
    if store == "encrypted":
        env["AGENTSESSIONS_KEY_FILE"] = _key(tmp_path)
    elif store == "jetstream":
        env["AGENTSESSIONS_STORE"] = _url(request, tag)
    return env


def run_writers(code: str, where: dict[str, Any], names: Sequence[str]) -> list[bytes]:
    """Run ``code`` in one process per name at once (argv: where, name, key file or "");
    each one's stdout, once all succeeded."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [str(where["where"]), where.get("key_file") or ""]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, argv[0], name, argv[1]],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for name in names
    ]
    done = [proc.communicate(timeout=120) for proc in procs]  # every one, then the verdict
    for proc, (_, err) in zip(procs, done, strict=True):
        assert proc.returncode == 0, err.decode()
    return [out for out, _ in done]


def cli(home: str | Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``agentsessions --home HOME ARGS...`` of this checkout, which must succeed."""
    done = subprocess.run(
        [sys.executable, "-m", "agentsessions", "--home", str(home), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done


def imports_no(framework: str, *modules: str) -> None:
    """The base install (agentsessions, its integrations package, its CLI, and ``modules``:
    a harness the CLI loads) imports no module of ``framework``."""
    code = (
        "import sys, agentsessions, agentsessions.integrations, agentsessions.cli\n"
        + "".join(f"import {module}\n" for module in modules)
        + f"assert not [m for m in sys.modules if m == {framework!r} or "
        f"m.startswith({framework + '.'!r})]\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr


def refuses_a_down_store(open_adapter: Callable[[str], object]) -> None:
    """``open_adapter(url)`` of a JetStream URL nobody listens on raises our
    UnavailableError (the store is down)."""
    port = socket.socket()
    port.bind(("127.0.0.1", 0))  # a port nobody listens on: the store is down
    try:
        with pytest.raises(UnavailableError, match="cannot connect to the NATS server"):
            open_adapter(f"nats://127.0.0.1:{port.getsockname()[1]}")
    finally:
        port.close()

"""``serve`` says where it listens only once SIGTERM/SIGINT stop it gracefully
(server/app.py ``serve_forever(ready=...)``): a supervisor that signals the daemon as soon as
it reads "listening on" must get a graceful stop, never the default action's death by the
signal (seen: exit -15 when the signal came between that line and the handlers)."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest
from needs import need

need("grpc", "grpc")

import agentsessions
from agentsessions.server.app import build_server


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_sent_when_ready_is_a_graceful_stop(tmp_path: Path, sig: int) -> None:
    assert threading.current_thread() is threading.main_thread()  # handlers run only here
    before = signal.getsignal(sig)
    with agentsessions.open(tmp_path / "home", runtime="local") as engine:
        server = build_server(engine, "127.0.0.1:0")
        got = server.serve_forever(grace=1.0, ready=lambda: os.kill(os.getpid(), sig))
    assert got == sig  # caught by serve_forever's handler, so it stopped as asked
    assert signal.getsignal(sig) is before  # and the previous handler is back

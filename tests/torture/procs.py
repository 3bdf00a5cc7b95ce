"""Starting, killing and reading torture writer processes (``agent_proc``).

A writer runs in its own process group: the warm hosts it starts for the memory harness
die with it, as everything on a machine does when it goes down.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START_LINES = 400  # lines a writer may print before the kill point is armed: a bound only


@dataclass
class Writer:
    """One running writer and every line it printed so far (read by a thread)."""

    proc: subprocess.Popen[str]
    err: Path
    lines: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, prefix: str, nth: int = 1, timeout: float = 120.0) -> bool:
        """Until the writer printed ``nth`` lines starting with ``prefix`` (False if it
        ended or the timeout passed first)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sum(1 for line in list(self.lines) if line.startswith(prefix)) >= nth:
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.005)
        return False

    def kill(self) -> None:
        """SIGKILL the writer's whole process group, then collect what it printed."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.finish()

    def finish(self, timeout: float = 300.0) -> int:
        """Wait for the writer to end; its exit code (stderr is kept for messages)."""
        code = self.proc.wait(timeout=timeout)
        if self.reader is not None:
            self.reader.join(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code

    def stderr(self) -> str:
        """The end of what the writer said on stderr (for a failure's message)."""
        return self.err.read_text(errors="replace")[-3000:] if self.err.exists() else ""


def start_writer(home: Path, effects: Path, seed: int, *args: str) -> Writer:
    """Start ``agent_proc`` on ``home`` (extra ``args``: --store, --turns, --adopt ...)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-u", "-m", "tests.torture.agent_proc", str(home), str(effects),
           str(seed), *args]  # fmt: skip
    home.parent.mkdir(parents=True, exist_ok=True)
    err = home.parent / f"writer-{seed}.err"
    with open(err, "w") as stderr:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, cwd=ROOT,
            start_new_session=True,
        )  # fmt: skip
    writer = Writer(proc, err)
    writer.reader = threading.Thread(target=writer._read, daemon=True)
    writer.reader.start()
    return writer

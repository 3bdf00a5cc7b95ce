"""The torture run's size, its seed, its counts and the summary line pytest prints.

``AGENTSESSIONS_TORTURE=N`` sizes the run (unset: the small CI run each test defines),
``AGENTSESSIONS_TORTURE_SEED=S`` repeats one (unset: a fresh seed, printed in the header
and the summary, so any failure can be run again exactly). Each test draws from its own
``random.Random`` seeded by the run's seed and the test's name, so one test's draws do not
depend on which others ran.

Loaded as a plugin by the root ``conftest.py`` so the summary is printed by the process that
owns the terminal: with parallel workers each worker sends its counts back to the
controller (``workeroutput``), which adds them up.
"""

from __future__ import annotations

import collections
import json
import os
import random
import secrets
from dataclasses import dataclass, field
from typing import Any

import pytest

SIZE = int(os.environ.get("AGENTSESSIONS_TORTURE", "0") or 0)
SEED = int(os.environ.get("AGENTSESSIONS_TORTURE_SEED", "") or secrets.randbelow(1 << 32))


def count(ci: int, per_n: int = 1) -> int:
    """How many faults of a family to inject: ``ci`` in the default run, N x ``per_n``
    when ``AGENTSESSIONS_TORTURE=N`` is set."""
    return SIZE * per_n if SIZE else ci


def rng(name: str) -> random.Random:
    """The random draws of test ``name`` in this run (same seed, same draws)."""
    return random.Random(f"{SEED}:{name}")


@dataclass
class Tally:
    """Faults injected by kind, acknowledged records checked, and the two must-be-zeros."""

    faults: collections.Counter[str] = field(default_factory=collections.Counter)
    acked: int = 0
    lost: int = 0
    undetected: int = 0
    detected: int = 0
    resolved: int = 0  # tool calls whose outcome a kill left unknown, resolved by hand

    def fault(self, kind: str, n: int = 1) -> None:
        """Count ``n`` faults of ``kind`` (e.g. ``kill:tool``, ``power-cut``, ``flip``)."""
        self.faults[kind] += n

    def to_json(self) -> dict[str, Any]:
        return {"faults": dict(self.faults), "acked": self.acked, "lost": self.lost,
                "undetected": self.undetected, "detected": self.detected,
                "resolved": self.resolved}  # fmt: skip

    def merge(self, other: dict[str, Any]) -> None:
        """Add a worker's counts."""
        self.faults.update(other.get("faults", {}))
        for name in ("acked", "lost", "undetected", "detected", "resolved"):
            setattr(self, name, getattr(self, name) + int(other.get(name, 0)))

    def line(self) -> str:
        """The run's summary line."""
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())) or "none"
        return (
            f"torture: seed {SEED}, N {SIZE or 'ci'}; faults {sum(self.faults.values())} "
            f"({kinds}); acknowledged records {self.acked}; lost {self.lost}; damage "
            f"detected {self.detected}, undetected {self.undetected}; unknown tool outcomes "
            f"resolved {self.resolved}"
        )


TALLY = Tally()
"""This process's counts (the tests add to it)."""


def pytest_report_header(config: pytest.Config) -> str:
    """The seed, before anything runs (a hang is reproducible too)."""
    return f"torture: AGENTSESSIONS_TORTURE_SEED={SEED} AGENTSESSIONS_TORTURE={SIZE or ''}"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Every worker runs with the controller's seed."""
    node.workerinput["torture_seed"] = SEED


def pytest_configure(config: pytest.Config) -> None:
    """A worker takes the controller's seed."""
    global SEED
    worker = getattr(config, "workerinput", None)
    if worker and "torture_seed" in worker:
        SEED = int(worker["torture_seed"])


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A worker hands its counts to the controller."""
    out = getattr(session.config, "workeroutput", None)
    if out is not None:
        out["torture"] = json.dumps(TALLY.to_json())


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """The controller adds up each worker's counts."""
    sent = getattr(node, "workeroutput", {}).get("torture")
    if sent:
        TALLY.merge(json.loads(sent))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The summary line, when any torture test ran (shows in ``pytest -q`` too)."""
    if TALLY.faults:
        terminalreporter.write_line(TALLY.line())

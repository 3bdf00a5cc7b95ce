"""Rules the controller, lifecycle, fresh start and replay share, in a module of their own.

They were in ``controller.py``, which ``lifecycle`` and ``freshstart`` import and which
imports them back (lazily): a cycle. Here they depend on nothing of the controller, so
every module of the package imports in one direction.
"""

from __future__ import annotations

from agentsessions.errors import HarnessMismatchError

from . import executions
from .spi import HarnessDescriptor

DEFAULT_HARNESS = "echo"
"""The harness of a session that names none."""


def fresh_start_hint(uid: str) -> str:
    """The way forward for a session whose harness memory is gone (exit 12)."""
    return (
        f"start the harness again with empty memory (recorded in the journal): "
        f"agentsessions exec {uid} --fresh-start --input TEXT"
    )


def check_harness(run: executions.Execution, name: str, descriptor: HarnessDescriptor) -> None:
    """Refuse to drive an execution recorded by another harness name or version."""
    recorded_name, recorded_version = run.harness
    if recorded_name and recorded_name not in (name, descriptor.id):
        raise HarnessMismatchError(
            f"execution {run.id} was recorded by harness {recorded_name!r}, not {name!r}",
            hint=f"pass --harness {recorded_name}",
        )
    if recorded_version and descriptor.version and recorded_version != descriptor.version:
        raise HarnessMismatchError(
            f"execution {run.id} was recorded by {recorded_name or name} version "
            f"{recorded_version!r}; this harness is version {descriptor.version!r}"
        )

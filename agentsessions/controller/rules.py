"""Rules the controller, lifecycle, fresh start and replay share, in a module of their own.

They were in ``controller.py``, which ``lifecycle`` and ``freshstart`` import and which
imports them back (lazily): a cycle. Here they depend on nothing of the controller, so
every module of the package imports in one direction.
"""

from __future__ import annotations

from agentsessions.errors import (
    HarnessMismatchError,
    InheritedToolIntentError,
    InvalidArgumentError,
)
from agentsessions.journal.stores.store import SessionInfo
from agentsessions.v1.workloadref import reserved

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
            hint=f"drive it with the harness that recorded it, {recorded_name!r}",
        )
    if recorded_version and descriptor.version and recorded_version != descriptor.version:
        raise HarnessMismatchError(
            f"execution {run.id} was recorded by {recorded_name or name} version "
            f"{recorded_version!r}; this harness is version {descriptor.version!r}"
        )


def check_config(config: bytes) -> None:
    """Refuse a caller's config in the form that names an execution's workload."""
    if reserved(config):
        raise InvalidArgumentError(
            "config may not begin with the bytes that name an execution's workload or model "
            "(NUL + 'agentsessions.'); nothing was written"
        )


def check_inherited_intent(info: SessionInfo, run: executions.Execution) -> None:
    """Refuse, before the harness runs, to re-drive a tool intent a fork child copied from
    its parent (digest 5.4): the effect belongs to the parent's session."""
    meta = info.meta
    if not meta.parent_uid or not run.effects or run.first_seq > meta.fork_seq:
        return
    seq, event = run.effects[-1]
    if event.get("kind") == "EVENT_TOOL_CALL" and seq <= meta.fork_seq:
        call = event.get("tool", {})
        raise InheritedToolIntentError(
            f"session {meta.uid} was forked from {meta.parent_uid} at seq {meta.fork_seq} "
            f"inside an open tool call {call.get('id', '')} ({call.get('tool', '')}, seq "
            f"{seq}); a fork child never re-drives an inherited tool intent",
            hint=f"resume the parent ({meta.parent_uid}), or fork at a completed turn",
            session=meta.uid,
            call_id=str(call.get("id", "")),
        )

"""Assemble a controller for an engine: the store, harnesses by name, models, a runtime,
and each session's tools (the workload recorded with it).

This is the only place that joins the core to concrete components; the core itself finds
harnesses through the registry and never imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agentsessions.controller.registry import Registry

from .defaults import DEFAULT_RUNTIME

if TYPE_CHECKING:
    # The controller (and through it the journal's schema) loads when a controller is first
    # built, not when the engine is: ``list`` and ``get`` never drive a harness.
    from agentsessions.controller.controller import Controller
    from agentsessions.controller.heldlimit import HeldLimit
    from agentsessions.controller.spi import Harness, ModelProvider, Runtime
    from agentsessions.journal.format.records import Record
    from agentsessions.journal.stores.store import Store

HARNESSES: Registry[Harness] = Registry("harness", "agentsessions.harnesses", "harnesses")
"""Harnesses by name: entry points ``agentsessions.harnesses``, else ``harnesses.<name>``."""


def build_controller(
    store: Store,
    home: Path,
    *,
    runtime: str | Runtime = DEFAULT_RUNTIME,
    default_model: str = "echo",
    on_record: Callable[[Record], None] | None = None,
    on_delta: Callable[[str], None] | None = None,
    keep_writers: int = 0,
    catalog: Mapping[str, str] | None = None,
    held_limit: HeldLimit | None = None,
) -> Controller:
    """A controller over ``store`` with the runtime (by name, or one already made, so that
    the controllers of one engine share it) and the model registry. ``keep_writers``: how
    many sessions' writers stay open between turns (a long-lived engine keeps them), and
    ``held_limit`` how many at most over all the engine's controllers.
    ``catalog``: the operator's model names (NAME -> SPEC, :mod:`agentsessions.models.catalog`);
    the current call's model guard runs before every model is made or called."""
    from agentsessions.controller.controller import Controller
    from agentsessions.models import create_model
    from agentsessions.models.catalog import guard_model
    from agentsessions.runtimes import create_runtime
    from agentsessions.tools.recorded import RecordedWorkloads

    def models(name: str) -> ModelProvider:
        return create_model(name, catalog=catalog)

    return Controller(
        store,
        harnesses=HARNESSES,
        models=models,
        runtime=create_runtime(runtime, home=home) if isinstance(runtime, str) else runtime,
        default_model=default_model,
        on_record=on_record,
        on_delta=on_delta,
        keep_writers=keep_writers,
        workloads=RecordedWorkloads(store),
        model_guard=guard_model,
        held_limit=held_limit,
    )


def close_tools(controller: Controller) -> None:
    """Close the executors ``controller``'s tools hold (the mcp server processes a
    workload started): an engine that closes leaves no tool server behind."""
    close = getattr(controller.workloads, "close", None)
    if callable(close):
        close()

"""The single writer: a session's turns, their replay, resume, fork, suspend and approvals.

:mod:`.controller` drives a turn (record before effect, CAS on every append, one writer per
session), :mod:`.replay` re-drives recorded turns from the journal with zero model calls,
:mod:`.spi` holds the seams a turn calls through (Harness, ModelProvider, Runtime,
ToolExecutor). On the layer map (:mod:`agentsessions`) it stands on ``journal`` and ``v1``
and imports nothing above them: no model, tool, runtime, harness, front end, grpc, typer
or rich.
"""

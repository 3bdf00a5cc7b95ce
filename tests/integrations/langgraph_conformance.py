"""Run LangGraph's checkpointer conformance suite against ``AgentSessionsSaver``; print JSON.

Run by ``test_langgraph_suites.py`` in a subprocess whose ``PYTHONPATH`` holds the unpacked
``langgraph-checkpoint-conformance`` source distribution (its ``langgraph.checkpoint.
conformance`` joins the installed ``langgraph`` namespace package). The store and the
master key come from the environment as for any engine (``AGENTSESSIONS_STORE``,
``AGENTSESSIONS_KEY_FILE``); the home is ``argv[1]``. Every capability the saver declares
(overrides) is run, each on a fresh saver with a project of its own; the output is
``{capability: {"detected", "passed", "failed", "failures"}}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import AsyncIterator

from langgraph.checkpoint.conformance import checkpointer_test, validate

from agentsessions.integrations.langgraph import AgentSessionsSaver
from agentsessions.sessions.local import open_local


def main() -> None:
    engine = open_local(sys.argv[1])

    @checkpointer_test(name="AgentSessionsSaver")
    async def saver() -> AsyncIterator[AgentSessionsSaver]:
        with AgentSessionsSaver(engine, project=f"conf-{uuid.uuid4().hex[:12]}") as made:
            yield made

    try:
        report = asyncio.run(validate(saver))
    finally:
        engine.close()
    out = {
        cap: {
            "detected": result.detected,
            "passed": result.tests_passed,
            "failed": result.tests_failed,
            "failures": result.failures,
        }
        for cap, result in report.results.items()
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()

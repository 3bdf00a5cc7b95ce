"""A host running turns of one session through its own engine, for the busy-session tests.

argv: store URL, home, session uid. Each ``turn`` line on stdin runs a turn whose model
prints ``running`` and then waits for the next line (the test acts meanwhile: the turn is
running, whatever the machine's speed), then prints ``done EXEC_STATE LAST_SEQ``, or
``error EXIT_CODE`` if it failed (its message on stderr). The engine keeps its writer
between turns, as a daemon's does; ``quit`` closes it.

argv ``cli ARGS...``: the CLI (``agentsessions ARGS...``) in a process that also knows the
``gate`` model, answering at once: a turn records the model it started on, and another
host resumes it on that model.
"""

from __future__ import annotations

import sys
from typing import Any

from agentsessions.controller.spi import Completion
from agentsessions.errors import AgentSessionsError
from agentsessions.models import MODELS
from agentsessions.sessions.local import open_local
from agentsessions.v1.construct import text_message


class Gate:
    """A model that answers once the test says ``go``."""

    def complete(self, request: Any, on_delta: Any = None) -> Completion:
        print("running", flush=True)
        sys.stdin.readline()
        return Completion(message=dict(text_message("assistant", "let go")))


class Open:
    """The ``gate`` model of another host: it answers at once."""

    def complete(self, request: Any, on_delta: Any = None) -> Completion:
        return Completion(message=dict(text_message("assistant", "let go")))


def main() -> None:
    if sys.argv[1:2] == ["cli"]:
        from agentsessions.cli.app import main as cli

        MODELS.register("gate", Open)
        cli(sys.argv[2:])
        return
    url, home, uid = sys.argv[1:4]
    gate = Gate()
    MODELS.register("gate", lambda: gate)
    with open_local(home, store_url=url) as engine:
        for line in sys.stdin:
            if line.strip() != "turn":
                break
            try:
                s = engine.run(uid, ["slowly"], model="gate").session
            except AgentSessionsError as exc:
                print(exc, file=sys.stderr, flush=True)  # what the CLI would say, for the test
                print(f"error {exc.exit_code}", flush=True)
            else:
                print(f"done {s.exec_state} {s.last_seq}", flush=True)


if __name__ == "__main__":
    main()

"""The chat harness declared REQUIRES_MEMORY_SNAPSHOT, so the controller hosts it on a warm
host (importable there as ``warm_chat:create``; the tests pass their ``sys.path`` on): its
runs are the chat harness's own, so a test of it is a test of chat's tool loop across the
warm runtime's wire.

``probe`` is a ``python:`` tool executor (it runs where the host mediates calls, the
caller's process): it appends ``line`` to ``config["path"]`` and answers with the kind of
the session's last journaled event at that moment and its own pid.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from agentsessions.controller.spi import (
    REQUIRES_MEMORY_SNAPSHOT,
    Capabilities,
    HarnessDescriptor,
    ToolRequest,
)
from agentsessions.journal.stores.file.store import FileStore
from harnesses.chat import DESCRIPTOR, ChatHarness

WARM_DESCRIPTOR = replace(
    DESCRIPTOR,
    id="warm-chat",
    capabilities=Capabilities(resumability=REQUIRES_MEMORY_SNAPSHOT),
)


class WarmChat(ChatHarness):
    """Chat, hosted warm (see the module docstring)."""

    def describe(self) -> HarnessDescriptor:
        return WARM_DESCRIPTOR


def create() -> WarmChat:
    """The registry's factory."""
    return WarmChat()


def probe(request: ToolRequest) -> dict[str, Any]:
    """Append the line, and say what the journal held when the executor ran, and where."""
    last = list(FileStore(str(request.config["home"])).read(request.session_uid))[-1]
    with open(str(request.config["path"]), "a", encoding="utf-8") as f:
        f.write(f"{request.args['line']}\n")
    return {"last_kind": str(last.event["kind"]), "pid": os.getpid()}

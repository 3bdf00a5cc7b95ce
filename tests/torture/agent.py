"""The torture workload: real turns of every kind, driven through the Sessions API.

A turn is one of :data:`OPS`: a chat turn that only calls the model (``model``), one whose
model asks for a mediated ``append_line`` call (``tool``), one whose call needs an approval
(``approval``: it parks, is approved by ``torture``, then resumed), a memory-harness turn that
commits working state (``state``), a fork of a chat session (``fork``) and a compaction
(``compact``). The model is :class:`TortureModel`: deterministic in its request, so a replay
reproduces every turn and a resumed turn asks again for the very same tool call.

The effects file is the at-most-once counter: every tool call appends one line that names
its session and turn, so a line written twice is an effect repeated. It lives outside the
journal, as a real side effect would.

Every record the engine hands back is durable (``RecordFrame``), and every write that
returned is acknowledged; :class:`Emit` receives both, so a writer process can print them
for its parent (``ACK uid seq hash``) before it is killed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentsessions.controller.spi import Completion, ModelRequest
from agentsessions.errors import (
    ApprovalParkedError,
    InvalidExecutionLogError,
    LockHeldError,
    NothingToCompactError,
    ToolOutcomeUnknownError,
)
from agentsessions.models import MODELS
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.values import RecordFrame

OPS = ("model", "tool", "approval", "state", "fork", "compact")
"""The kinds of turn the workload runs; a kill is tallied by the kind it interrupted."""
MODEL = "torture"
TOOL, GATED = "append_line", "gated_line"


def _text(message: dict[str, Any]) -> str:
    parts = message.get("parts") or []
    return "".join(str(p.get("text", {}).get("text", "")) for p in parts)


class TortureModel:
    """A model whose answer depends only on its request (what replay needs).

    A last message ``tool LINE`` or ``gated LINE`` from the user is answered with one call
    of ``append_line`` (or ``gated_line``) writing LINE; anything else with a text that is a
    hash of the whole conversation. ``delay`` (class attribute, seconds) makes each call
    take that long: a kill then often lands inside a model call.
    """

    delay = 0.0

    def complete(self, request: ModelRequest, on_delta: Callable[[str], None] | None = None) -> Any:
        """The answer to ``request`` (a tool call or a text)."""
        if self.delay:
            time.sleep(self.delay)
        messages = [dict(m) for m in request.messages]
        last = messages[-1] if messages else {}
        words = _text(last).split(" ", 1)
        digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
        if last.get("role") == "user" and len(words) == 2 and words[0] in ("tool", "gated"):
            call = {"id": f"call-{digest[:12]}", "tool": TOOL if words[0] == "tool" else GATED,
                    "args": {"line": words[1]}}  # fmt: skip
            return Completion({"role": "assistant", "parts": [{"tool_call": call}]})
        answer = f"answer-{digest[:16]}"
        if on_delta is not None:
            on_delta(answer)
        return Completion({"role": "assistant", "parts": [{"text": {"text": answer}}]})


def register() -> None:
    """Make ``torture`` a model name in this process (idempotent)."""
    if MODEL not in MODELS.names():
        MODELS.register(MODEL, TortureModel)


def workload_toml(effects: Path) -> str:
    """The chat sessions' tools: both write one line to ``effects`` per call."""
    config = f"config = {{ path = {json.dumps(str(effects))} }}\n"
    return (
        f'[tools.{TOOL}]\nmediation = "mediated"\nexecutor = "append_line"\n{config}'
        'parameters = { type = "object", properties = { line = { type = "string" } } }\n'
        f'[tools.{GATED}]\nmediation = "approval"\nexecutor = "append_line"\n{config}'
        'parameters = { type = "object", properties = { line = { type = "string" } } }\n'
    )


@dataclass
class Emit:
    """Where the workload reports: each acknowledged record, each new session, each turn."""

    ack: Callable[[str, int, str], None]
    session: Callable[[str, str], None] = lambda uid, kind: None
    phase: Callable[[str, str], None] = lambda uid, op: None


@dataclass
class Workload:
    """A random sequence of turns over a growing set of sessions, in one engine."""

    engine: Sessions
    effects: Path
    rng: random.Random
    emit: Emit
    chats: list[str] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)
    turns: int = 0
    ops: tuple[str, ...] = OPS
    wait: float = 0.0  # how long a turn waits for a session another writer holds

    @property
    def tools(self) -> Path:
        """The chat sessions' workload file (next to the effects file)."""
        return self.effects.with_suffix(".toml")

    def start(self) -> None:
        """A chat and a memory session to begin with, unless adopted ones are there."""
        self.tools.write_text(workload_toml(self.effects))
        if not self.chats:
            self.adopt(self.engine.create(harness="chat", model=MODEL, tools=self.tools).uid,
                       "chat")  # fmt: skip
        if not self.memories:
            self.adopt(self.engine.create(harness="memory").uid, "memory")

    def adopt(self, uid: str, kind: str) -> None:
        """Work on ``uid`` (an existing session of ``kind``: chat or memory) from now on."""
        (self.chats if kind == "chat" else self.memories).append(uid)
        self.emit.session(uid, kind)

    def step(self) -> str:
        """Run one random turn; its kind ("busy" if another writer held the session longer
        than ``wait``: refused before anything was written)."""
        op = self.rng.choice(self.ops)
        uid = self.rng.choice(self.memories if op == "state" else self.chats)
        self.emit.phase(uid, op)
        self.turns += 1
        tag = f"{uid[-6:]}.{self.turns}.{self.rng.randrange(1 << 30)}"
        try:
            getattr(self, f"_{op}")(uid, tag)
        except LockHeldError:
            return "busy"
        except InvalidExecutionLogError as exc:
            if "interrupted turn" not in exc.message:
                raise
            return self._finish_interrupted(uid)
        return op

    def _finish_interrupted(self, uid: str) -> str:
        """Another writer was killed mid-turn on ``uid``: finish its turn, as the engine's
        refusal asks (``resume``), and go on; a turn left unresolved or busy is left for
        the checks' recovery."""
        try:
            self._frames(self.engine.resume(uid, wait=self.wait))
        except (LockHeldError, ToolOutcomeUnknownError, ApprovalParkedError):
            return "busy"
        return "resumed"

    def _frames(self, frames: Iterable[Any]) -> None:
        for frame in frames:
            if isinstance(frame, RecordFrame):
                self.emit.ack(frame.uid, frame.record.seq, frame.record.content_hash)

    def _model(self, uid: str, tag: str) -> None:
        self._frames(self.engine.exec(uid, [f"hello {tag}"], tools=self.tools, wait=self.wait))

    def _tool(self, uid: str, tag: str) -> None:
        self._frames(self.engine.exec(uid, [f"tool {tag}"], tools=self.tools, wait=self.wait))

    def _approval(self, uid: str, tag: str) -> None:
        with contextlib.suppress(ApprovalParkedError):
            self._frames(self.engine.exec(uid, [f"gated {tag}"], tools=self.tools))
        decided = self.engine.approve(uid, approved=True, actor="torture")
        self.emit.ack(uid, decided.decision.seq, decided.decision.content_hash)
        self._frames(self.engine.resume(uid))

    def _state(self, uid: str, tag: str) -> None:
        self._frames(self.engine.exec(uid, [f"remember {tag}"], wait=self.wait))

    def _fork(self, uid: str, tag: str) -> None:
        for child in self.engine.fork(uid):
            self.adopt(child.uid, "chat")

    def _compact(self, uid: str, tag: str) -> None:
        before = self.engine.get(uid).last_seq
        try:
            self.engine.compact(uid, keep_turns=1)
        except NothingToCompactError:
            return
        for record in self.engine.read(uid, from_seq=before + 1):
            self.emit.ack(uid, record.seq, record.content_hash)

"""The chat harness: a history-aware chat loop, one model call per turn.

Invariants: the request is built only from the config, ``Start.history`` and
``Start.inputs``, so replaying the journal rebuilds the same request (STATELESS_REPLAY, I0);
the harness writes nothing itself (the sink records MODEL_CALL and the completion's OUTPUT)
and keeps no state between runs.

The request's messages are, in order: the system prompt (role ``system``, left out when
empty), the INPUT and OUTPUT events among the last ``history_events`` events of the history
(as ``user`` and ``assistant`` turns; other kinds are skipped), then the new inputs. Model
``""`` means "the session's model": the controller fills it in.

Config (``Start.config``) is UTF-8 JSON, for example
``{"system_prompt": "...", "model": "", "history_events": 50}``: empty config or a missing key
takes the default and unknown keys are ignored; text that is not a JSON object, or a value of
the wrong type, raises HarnessError naming the problem.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentsessions.controller.spi import (
    STATELESS_REPLAY,
    Capabilities,
    Event,
    HarnessDescriptor,
    Message,
    ModelRequest,
    Sink,
    Start,
)
from agentsessions.errors import HarnessError
from agentsessions.v1.model import text_message

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."
DEFAULT_HISTORY_EVENTS = 50
DESCRIPTOR = HarnessDescriptor(
    id="chat",
    version="1",
    capabilities=Capabilities(resumability=STATELESS_REPLAY),
)
_ROLES = {"EVENT_INPUT": "user", "EVENT_OUTPUT": "assistant"}
_CONFIG_HINT = 'config is JSON like {"system_prompt": "...", "model": "", "history_events": 50}'


@dataclass(frozen=True)
class ChatConfig:
    """The chat harness's per-execution settings (from ``Start.config``)."""

    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    model: str = ""
    history_events: int = DEFAULT_HISTORY_EVENTS

    @classmethod
    def parse(cls, config: bytes) -> ChatConfig:
        """Settings from config bytes; empty means defaults. Raises HarnessError if invalid."""
        if not config.strip():
            return cls()
        try:
            doc: Any = json.loads(config.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            msg = f"chat: config is not valid JSON: {exc}"
            raise HarnessError(msg, hint=_CONFIG_HINT) from None
        if doc is None:
            return cls()
        if not isinstance(doc, dict):
            raise HarnessError(
                f"chat: config must be a JSON object, got {type(doc).__name__}", hint=_CONFIG_HINT
            )
        prompt = doc.get("system_prompt", DEFAULT_SYSTEM_PROMPT)
        model = doc.get("model", "")
        events = doc.get("history_events", DEFAULT_HISTORY_EVENTS)
        for key, value in (("system_prompt", prompt), ("model", model)):
            if not isinstance(value, str):
                raise HarnessError(f"chat: config {key} must be a string", hint=_CONFIG_HINT)
        if type(events) is not int or events < 0:
            raise HarnessError(
                f"chat: config history_events must be an integer >= 0, got {events!r}",
                hint=_CONFIG_HINT,
            )
        return cls(system_prompt=prompt, model=model, history_events=events)


class ChatHarness:
    """System prompt + recent conversation + new inputs, sent to the model in one call."""

    def describe(self) -> HarnessDescriptor:
        """The chat harness's descriptor (id "chat", version "1", STATELESS_REPLAY)."""
        return DESCRIPTOR

    def run(self, start: Start, sink: Sink) -> None:
        """Build the request from config, history and inputs, and make the model call."""
        cfg = ChatConfig.parse(start.config)
        sink.model(ModelRequest(model=cfg.model, messages=build_messages(cfg, start), params=None))


def build_messages(cfg: ChatConfig, start: Start) -> tuple[Message, ...]:
    """The request's messages: system prompt, conversation from history, new inputs."""
    messages: list[Message] = []
    if cfg.system_prompt:
        messages.append(dict(text_message("system", cfg.system_prompt)))
    if cfg.history_events:
        messages.extend(conversation(start.history.tail(cfg.history_events)))
    messages.extend(start.inputs)
    return tuple(messages)


def conversation(events: list[Event]) -> list[Message]:
    """INPUT messages as user turns and OUTPUT messages as assistant turns, in order."""
    out: list[Message] = []
    for event in events:
        role = _ROLES.get(event.get("kind", ""))
        msg = event.get("message")
        if role is None or msg is None:
            continue
        out.append(msg if msg.get("role") == role else {**msg, "role": role})
    return out


def create() -> ChatHarness:
    """A new chat harness (the registry's factory)."""
    return ChatHarness()

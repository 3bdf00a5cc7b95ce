"""Tools on the OpenAI chat-completions wire: definitions and choice out, calls in, results back.

The journal's shapes are the reference's (``agentsessions.v1``): a ``ToolDefinition`` is
``{"name", "description", "input_schema"}``, a ``ToolChoice`` is ``{"mode", "name"}``, a
completion that asks for tools carries ``{"tool_call": {"id", "tool", "args"}}`` parts and each
result comes back as a ``{"tool_result": {...}}`` part in a message with role ``tool``. This
module maps them to and from the OpenAI shapes:

- a definition -> ``{"type": "function", "function": {"name", "description", "parameters"}}``
  (``description`` and ``parameters`` only when the definition has them);
- tool choice ``MODE_AUTO`` / ``MODE_NONE`` -> ``"auto"`` / ``"none"``; ``MODE_REQUIRED`` ->
  ``"required"``, or ``{"type": "function", "function": {"name"}}`` when it names a tool;
  ``MODE_UNSPECIFIED`` (or no choice) sends no ``tool_choice`` (the server's default);
- an assistant message's ``tool_call`` parts -> its ``tool_calls`` (arguments as a compact JSON
  string, ``{}`` when the call has none), content ``null`` when it has no text;
- a ``tool`` message -> one ``{"role": "tool", "tool_call_id", "content"}`` per
  ``tool_result`` part; the content is the result's text content parts joined, else its
  ``output`` as compact JSON; an error result leads with ``error: <error>`` (or its code);
- the answer's ``tool_calls`` (streamed ones assembled by ``index`` across chunks) ->
  ``tool_call`` parts, the arguments parsed from their JSON string into an object.

Invariants: nothing is sent that the journal does not say, so what cannot be mapped whole (a
tool part in the wrong role, a result without an id, a result whose only payload is an
``output_uri``, a choice naming a tool that was not offered) is refused with
InvalidArgumentError before any byte leaves. An answer whose tool calls are not of the OpenAI
shape raises :class:`Malformed` (the provider reports the endpoint as incompatible); one whose
arguments are not a JSON object raises HarnessError: the model, not the endpoint, misbehaved,
and the turn fails with an ERROR on the record instead of recording a call no tool can run.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentsessions.errors import HarnessError, InvalidArgumentError
from agentsessions.v1.construct import struct_value
from agentsessions.v1.model import TOOL_CHOICE_MODES, Part

__all__ = [
    "Malformed",
    "ToolCallAssembler",
    "assistant_message",
    "tool_choice_body",
    "tool_messages",
    "tools_body",
]

_DEFINITION_KEYS = frozenset({"name", "description", "input_schema"})
_CHOICES = {"MODE_AUTO": "auto", "MODE_NONE": "none", "MODE_REQUIRED": "required"}


class Malformed(Exception):
    """The server's tool calls are not of the chat-completions shape."""


# --------------------------------------------------------------------------- request


def tools_body(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``tools`` array for the request's tool definitions (see the module doc)."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, definition in enumerate(tools):
        where = f"openai model: tool definition {index}"
        if not isinstance(definition, Mapping):
            raise InvalidArgumentError(f"{where} is not an object")
        unknown = sorted(set(definition) - _DEFINITION_KEYS)
        if unknown:
            raise InvalidArgumentError(f"{where} has unknown field {unknown[0]!r}")
        name = definition.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"{where} needs a name")
        if name in seen:
            raise InvalidArgumentError(f"{where}: tool {name!r} is defined twice")
        seen.add(name)
        function: dict[str, Any] = {"name": name}
        description = definition.get("description", "")
        if not isinstance(description, str):
            raise InvalidArgumentError(f"{where}: description is not a string")
        if description:
            function["description"] = description
        schema = definition.get("input_schema")
        if schema is not None:
            if not isinstance(schema, Mapping):
                raise InvalidArgumentError(f"{where}: input_schema is not a JSON object")
            function["parameters"] = dict(schema)
        out.append({"type": "function", "function": function})
    return out


def tool_choice_body(choice: Mapping[str, Any] | None, offered: Sequence[str]) -> Any:
    """The ``tool_choice`` value, or None when the request leaves it to the server."""
    if choice is None:
        return None
    if not isinstance(choice, Mapping) or set(choice) - {"mode", "name"}:
        raise InvalidArgumentError(f"openai model: bad tool_choice {choice!r}")
    mode = choice.get("mode", TOOL_CHOICE_MODES[0])
    if type(mode) is int and 0 <= mode < len(TOOL_CHOICE_MODES):
        mode = TOOL_CHOICE_MODES[mode]
    if mode not in TOOL_CHOICE_MODES:
        raise InvalidArgumentError(f"openai model: unknown tool_choice mode {mode!r}")
    name = choice.get("name", "")
    if not isinstance(name, str):
        raise InvalidArgumentError("openai model: tool_choice name is not a string")
    if name and mode != "MODE_REQUIRED":
        raise InvalidArgumentError(
            f"openai model: tool_choice names {name!r} but its mode is {mode} (only"
            " MODE_REQUIRED may name a tool)"
        )
    if name and name not in offered:
        raise InvalidArgumentError(f"openai model: tool_choice names {name!r}, not offered")
    if mode == "MODE_UNSPECIFIED":
        return None
    if mode != "MODE_NONE" and not offered:
        raise InvalidArgumentError(f"openai model: tool_choice is {mode} but no tool is offered")
    if name:
        return {"type": "function", "function": {"name": name}}
    return _CHOICES[mode]


def assistant_message(index: int, content: str, calls: Sequence[Mapping[str, Any]]) -> Any:
    """An assistant message with ``tool_calls`` (content ``null`` when it has no text)."""
    wire = [_call_body(index, n, call) for n, call in enumerate(calls)]
    return {"role": "assistant", "content": content or None, "tool_calls": wire}


def _call_body(index: int, n: int, call: Mapping[str, Any]) -> dict[str, Any]:
    where = f"openai model: message {index} tool call {n}"
    if not isinstance(call, Mapping):
        raise InvalidArgumentError(f"{where} is not an object")
    call_id, tool, args = call.get("id"), call.get("tool"), call.get("args", {})
    if not isinstance(call_id, str) or not call_id:
        raise InvalidArgumentError(f"{where} has no id (a tool result could not answer it)")
    if not isinstance(tool, str) or not tool:
        raise InvalidArgumentError(f"{where} names no tool")
    if not isinstance(args, Mapping):
        raise InvalidArgumentError(f"{where}: args is not a JSON object")
    arguments = json.dumps(args, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return {"id": call_id, "type": "function", "function": {"name": tool, "arguments": arguments}}


def tool_messages(index: int, parts: Sequence[Part]) -> list[dict[str, Any]]:
    """One ``tool`` message per ``tool_result`` part of message ``index`` (role ``tool``)."""
    out: list[dict[str, Any]] = []
    for part in parts:
        kind = next(iter(part), "")
        if kind == "reasoning" or kind == "":
            continue
        if kind != "tool_result":
            raise InvalidArgumentError(
                f"openai model: tool message {index} has a {kind} part; only tool results"
                " (one per call) can be sent in a tool message"
            )
        result = part["tool_result"]
        call_id = result.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise InvalidArgumentError(
                f"openai model: tool message {index} has a result without an id"
            )
        content = _result_content(index, result)
        out.append({"role": "tool", "tool_call_id": call_id, "content": content})
    if not out:
        raise InvalidArgumentError(
            f"openai model: tool message {index} has no tool_result part to send"
        )
    return out


def _result_content(index: int, result: Mapping[str, Any]) -> str:
    texts: list[str] = []
    for part in result.get("content") or ():
        kind = next(iter(part), "")
        if kind == "text":
            texts.append(str(part["text"].get("text", "")))
        elif kind not in ("", "reasoning"):
            raise InvalidArgumentError(
                f"openai model: the result in tool message {index} has a {kind} content part;"
                " only text content is supported"
            )
    output = result.get("output")
    if texts:
        body = "".join(texts)
    elif output is not None:
        body = json.dumps(output, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    elif result.get("output_uri"):
        raise InvalidArgumentError(
            f"openai model: the result in tool message {index} is only an output_uri;"
            " the model could not see it"
        )
    else:
        body = ""
    if not result.get("is_error"):
        return body
    reason = str(result.get("error") or result.get("code") or "the tool failed")
    return f"error: {reason}" + (f"\n{body}" if body else "")


# --------------------------------------------------------------------------- response


@dataclass
class _Pending:
    id: str = ""
    type: str = ""
    name: str = ""
    arguments: str = ""
    object_arguments: dict[str, Any] | None = None


class ToolCallAssembler:
    """Tool calls put together from (streamed) fragments, keyed by their ``index``.

    A streamed call's ``arguments`` arrive in pieces and are concatenated in order. ``id`` and
    ``name`` usually come whole in the first fragment; a later non-empty value equal to what
    is held is a repeat (some servers resend it) and anything else is appended as a piece.
    """

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self._calls: dict[int, _Pending] = {}

    def add_reply(self, raw: Any) -> None:
        """Take a non-streamed ``message.tool_calls`` (absent or null: no calls)."""
        if raw is None:
            return
        if not isinstance(raw, list):
            raise Malformed("tool_calls is not a list")
        for position, item in enumerate(raw):
            if not isinstance(item, dict):
                raise Malformed(f"tool_calls[{position}] is not an object")
            self.add(position, item)

    def add_deltas(self, raw: Any) -> None:
        """Take a chunk's ``delta.tool_calls`` (absent or null: nothing)."""
        if raw is None:
            return
        if not isinstance(raw, list):
            raise Malformed("delta.tool_calls is not a list")
        for position, item in enumerate(raw):
            if not isinstance(item, dict):
                raise Malformed(f"delta.tool_calls[{position}] is not an object")
            index = item.get("index", position)
            if type(index) is not int or index < 0:
                raise Malformed(f"delta.tool_calls[{position}].index is not a count: {index!r}")
            self.add(index, item)

    def add(self, index: int, item: dict[str, Any]) -> None:
        """Merge one call object (whole or a fragment) into call ``index``."""
        call = self._calls.setdefault(index, _Pending())
        call.id = _merge(call.id, _string(item, "id", index))
        kind = _string(item, "type", index)
        if kind and kind != "function":
            raise Malformed(f"tool call {index} has unsupported type {kind!r}")
        call.type = call.type or kind
        function = item.get("function")
        if function is None:
            return
        if not isinstance(function, dict):
            raise Malformed(f"tool call {index}: function is not an object")
        call.name = _merge(call.name, _string(function, "name", index))
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a few compatible servers send the object itself
            call.object_arguments = arguments
        elif arguments is not None:
            if not isinstance(arguments, str):
                raise Malformed(f"tool call {index}: arguments is not a string")
            call.arguments += arguments

    def parts(self) -> list[Part]:
        """The ``tool_call`` parts, in index order."""
        out: list[Part] = []
        for index in sorted(self._calls):
            call = self._calls[index]
            if not call.name:
                raise Malformed(f"tool call {index} names no function")
            args = call.object_arguments
            if args is None:
                args = self._arguments(index, call)
            # a server that gives no id still gets a unique one: a tool result must answer it
            call_id = call.id or f"call_{secrets.token_hex(12)}"
            try:
                value = struct_value(args, path="args")
            except InvalidArgumentError as exc:  # NaN, a number no float64 holds
                raise self._bad_arguments(index, call, str(exc)) from exc
            out.append({"tool_call": {"id": call_id, "tool": call.name, "args": value}})
        return out

    def _arguments(self, index: int, call: _Pending) -> dict[str, Any]:
        text = call.arguments.strip()
        if not text:
            return {}  # a call of a function without parameters
        try:
            decoded = json.loads(text, parse_constant=_no_constant)
        except ValueError:
            decoded = None
        if not isinstance(decoded, dict):
            shown = text if len(text) <= 80 else text[:80] + "..."
            raise self._bad_arguments(index, call, f"not a JSON object: {shown!r}")
        return decoded

    def _bad_arguments(self, index: int, call: _Pending, why: str) -> HarnessError:
        return HarnessError(
            f"model endpoint {self.endpoint} asked for tool {call.name!r} (call {index}) with"
            f" arguments {why}",
            hint="the model produced bad tool arguments; run the turn again",
            url=self.endpoint,
        )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _string(obj: dict[str, Any], key: str, index: int) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Malformed(f"tool call {index}: {key} is not a string")
    return value


def _merge(held: str, piece: str) -> str:
    return held if not piece or piece == held else held + piece

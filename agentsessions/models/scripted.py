"""The scripted model: offline answers for tests and demos, deterministic or deliberately not.

Exactly one mode per instance:

- ``answers`` (from ``file=PATH``): the answers in order, one per call. A ``.json`` file holds a
  JSON array whose entries are strings (a text answer) or objects ``{"text": "...",
  "tool_calls": [{"name": "...", "arguments": {...}}]}`` (both keys optional, at least one
  given): the completion then holds the text part (if the text is not empty) and one
  ``tool_call`` part per call, ``{"id": "call-<entry>-<n>", "tool": name, "args": arguments}``
  (entry and n counted from 0, so the ids are the same in every run of the script). An
  entry ``{"overflow": true}`` (alone) answers no completion: that call raises
  ContextOverflowError, as a real model refuses a request over its context window, so an
  offline run can drive the chat harness's compaction on overflow. Any
  other file holds one text answer per line (blank lines skipped, so use JSON for empty or
  multi-line answers). A script is checked whole when it is loaded: an unknown key or a
  wrong type is an InvalidArgumentError naming the file and the entry. When the answers run
  out the next call raises UnavailableError rather than cycling: a test that makes more
  model calls than it scripted fails loudly instead of quietly reusing an answer.
- ``seed`` (the default, seed 0): the answer is ``scripted-<seed>-<16 hex>``, a SHA-256 of the
  seed and the whole request (model, messages, params, tools, tool choice). The same request
  and seed always get the same answer, in any process.
- ``nondeterministic``: a fresh random answer on every call, even for the same request. A
  replay that wrongly calls the model therefore cannot reproduce the journal by accident.

``delay=SECONDS`` (any mode) makes each answer take that long, spread over its deltas: a
slow model for demos and crash tests that kill a process while a call is in flight.

Invariants: ``calls`` counts every ``complete`` call, including one that fails on an exhausted
script (so a test can assert that replay made zero calls); the role is ``assistant``; no usage
is reported; a given ``on_delta`` receives the answer's text in word-sized pieces whose
concatenation equals the completion text (tool calls are not streamed).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentsessions.controller.spi import Completion, ModelRequest
from agentsessions.errors import ContextOverflowError, InvalidArgumentError, UnavailableError
from agentsessions.models.catalog import clip
from agentsessions.v1.construct import message, struct_value, text_message, text_part
from agentsessions.v1.model import Part
from agentsessions.valueclass import value

OPTIONS = ("file", "seed", "nondeterministic", "delay")
MAX_DELAY_SECONDS = 600.0
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_PIECES = re.compile(r"\S+\s*|\s+")
_ENTRY_KEYS = frozenset({"text", "tool_calls", "overflow"})
_CALL_KEYS = frozenset({"name", "arguments"})


@value(frozen=True)
class ScriptedCall:
    """One tool call a scripted answer asks for."""

    name: str
    arguments: Mapping[str, Any]


@value(frozen=True)
class Answer:
    """One scripted answer: its text and the tool calls it asks for (ids made at answer)."""

    text: str = ""
    tool_calls: tuple[ScriptedCall, ...] = ()
    overflow: bool = False  # this call is refused as over the context window

    def parts(self, entry: int) -> list[Part]:
        """The completion's parts: the text (if any), then ``call-<entry>-<n>`` calls."""
        parts: list[Part] = [text_part(self.text)] if self.text else []
        for n, call in enumerate(self.tool_calls):
            body = {"id": f"call-{entry}-{n}", "tool": call.name, "args": dict(call.arguments)}
            parts.append({"tool_call": body})  # type: ignore[typeddict-item]
        return parts


class ScriptedModel:
    """An offline model whose answers come from a script, a seed, or randomness."""

    def __init__(
        self,
        *,
        answers: Sequence[str | Answer] | None = None,
        seed: int = 0,
        nondeterministic: bool = False,
        source: str = "",
        delay: float = 0.0,
    ) -> None:
        if answers is not None and nondeterministic:
            raise InvalidArgumentError("scripted model: answers and nondeterministic exclude")
        self.answers = None if answers is None else tuple(map(_as_answer, answers))
        self.seed = seed
        self.nondeterministic = nondeterministic
        self.source = source
        self.delay = delay
        self.calls = 0
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        """A model answering, in order, the answers stored in ``path`` (see the module doc)."""
        return cls(answers=load_answers(Path(path)), source=str(path))

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ScriptedModel:
        """A model from spec options ``file``, ``seed`` or ``nondeterministic`` (one mode)."""
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise InvalidArgumentError(
                f"scripted model: unknown option {clip(unknown[0])!r} (known: {', '.join(OPTIONS)})"
            )
        nondeterministic = _flag("nondeterministic", options.get("nondeterministic", "0"))
        modes = [name for name in ("file", "seed") if name in options] + (
            ["nondeterministic"] if nondeterministic else []
        )
        if len(modes) > 1:
            raise InvalidArgumentError(f"scripted model: {' and '.join(modes)} exclude each other")
        delay = _delay(options.get("delay", "0"))
        if "file" in options:
            model = cls.from_file(options["file"])
            model.delay = delay
            return model
        return cls(
            seed=_seed(options.get("seed", "0")), nondeterministic=nondeterministic, delay=delay
        )

    def complete(
        self, request: ModelRequest, on_delta: Callable[[str], None] | None = None
    ) -> Completion:
        """Answer per the mode; raise UnavailableError when a script is exhausted."""
        with self._lock:
            self.calls += 1
            call = self.calls
        found = self._answer(request, call)
        if found.overflow:
            where = f" of {self.source}" if self.source else ""
            raise ContextOverflowError(
                f"scripted model: script entry {call - 1}{where} refuses the request as over "
                "the model's context window"
            )
        text = found.text
        # pieces only matter to a stream or a delay: Sessions.run (no delta) skips the split
        if self.delay:
            self._slowly(text, on_delta)
        elif on_delta is not None:  # a stream: nothing but a call per piece (a delta a word)
            for piece in _PIECES.findall(text):  # a match is never empty
                on_delta(piece)
        if not found.tool_calls:  # exactly the text answer it always was, empty text included
            return Completion(message=dict(text_message("assistant", text)))
        return Completion(message=dict(message("assistant", *found.parts(call - 1))))

    def _slowly(self, text: str, on_delta: Callable[[str], None] | None) -> None:
        """A slow model (demos, crash tests): ``delay`` seconds spread over the pieces."""
        pieces = _PIECES.findall(text) or [""]
        for piece in pieces:
            time.sleep(self.delay / len(pieces))
            if on_delta is not None and piece:
                on_delta(piece)

    def _answer(self, request: ModelRequest, call: int) -> Answer:
        if self.answers is not None:
            # A turn resumed in a new process (after an approval, a crash) continues the
            # script where the turn left off: this instance's count starts over there, but
            # the request shows k answers given since the user spoke, so this is call k+1.
            call = max(call, _answers_this_turn(request) + 1)
            if call > len(self.answers):
                where = f" in {self.source}" if self.source else ""
                raise UnavailableError(
                    f"scripted model: call {call} but only {len(self.answers)} answers{where}",
                    hint="add answers to the script",
                )
            return self.answers[call - 1]
        if self.nondeterministic:
            return Answer(f"scripted-random-{os.urandom(8).hex()}")
        return Answer(f"scripted-{self.seed}-{request_digest(request, self.seed)[:16]}")

    def __repr__(self) -> str:
        if self.answers is not None:
            return f"ScriptedModel(answers={len(self.answers)}, source={self.source!r})"
        if self.nondeterministic:
            return "ScriptedModel(nondeterministic=True)"
        return f"ScriptedModel(seed={self.seed})"


def _answers_this_turn(request: ModelRequest) -> int:
    """How many assistant messages follow the request's last user message (the answers
    this turn has had: a tool loop's earlier steps)."""
    count = 0
    for each in reversed(request.messages):
        role = each.get("role")
        if role == "user":
            break
        count += role == "assistant"
    return count


def _delay(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= MAX_DELAY_SECONDS:
        raise InvalidArgumentError(
            f"scripted model: delay must be 0..{MAX_DELAY_SECONDS:g} seconds, got {clip(text)!r}"
        )
    return value


def request_digest(request: ModelRequest, seed: int) -> str:
    """Hex SHA-256 of the seed and the request's content, stable across processes."""
    content = {
        "model": request.model,
        "messages": list(request.messages),
        "params": None if request.params is None else dict(request.params),
        "tools": list(request.tools),
        "tool_choice": request.tool_choice,
    }
    encoded = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{seed}\n{encoded}".encode()).hexdigest()


def load_answers(path: Path) -> list[Answer]:
    """The answers in ``path``: a JSON array of answers (``.json``) or one text per line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgumentError(f"scripted model: cannot read {path}: {exc}") from exc
    if path.suffix.lower() != ".json":
        return [Answer(line) for line in text.splitlines() if line.strip()]
    try:
        entries = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise InvalidArgumentError(f"scripted model: {path} is not JSON: {exc}") from exc
    if not isinstance(entries, list):
        raise InvalidArgumentError(
            f"scripted model: {path} must hold a JSON array of answers (strings or objects)"
        )
    return [_entry(entry, f"scripted model: {path} entry {i}") for i, entry in enumerate(entries)]


def _entry(entry: object, where: str) -> Answer:
    """One script entry, checked strictly (``where`` names the file and the entry)."""
    if isinstance(entry, str):
        return Answer(entry)
    if not isinstance(entry, dict):
        raise InvalidArgumentError(
            f"{where}: expected a string or an object, got {_json_type(entry)}"
        )
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise InvalidArgumentError(
            f"{where}: unknown key {unknown[0]!r} (known: text, tool_calls, overflow)"
        )
    if "overflow" in entry:
        if entry["overflow"] is not True or len(entry) != 1:
            why = 'an overflow entry is exactly {"overflow": true}'
            raise InvalidArgumentError(f"{where}: {why}")
        return Answer(overflow=True)
    if not entry:
        raise InvalidArgumentError(f"{where}: an object answer needs text or tool_calls")
    text = entry.get("text", "")
    if not isinstance(text, str):
        raise InvalidArgumentError(f"{where}: text must be a string, got {_json_type(text)}")
    calls = entry.get("tool_calls", [])
    if not isinstance(calls, list):
        raise InvalidArgumentError(f"{where}: tool_calls must be an array, got {_json_type(calls)}")
    return Answer(text, tuple(_call(c, f"{where} tool_calls[{n}]") for n, c in enumerate(calls)))


def _call(call: object, where: str) -> ScriptedCall:
    if not isinstance(call, dict):
        raise InvalidArgumentError(f"{where}: expected an object, got {_json_type(call)}")
    unknown = sorted(set(call) - _CALL_KEYS)
    if unknown:
        raise InvalidArgumentError(f"{where}: unknown key {unknown[0]!r} (known: name, arguments)")
    name = call.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"{where}: name must be a non-empty string")
    arguments = call.get("arguments", {})
    if not isinstance(arguments, dict):
        raise InvalidArgumentError(
            f"{where}: arguments must be an object, got {_json_type(arguments)}"
        )
    return ScriptedCall(name, struct_value(arguments, path=f"{where} arguments"))


def _as_answer(answer: str | Answer) -> Answer:
    return Answer(answer) if isinstance(answer, str) else answer


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _seed(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise InvalidArgumentError(
            f"scripted model: seed must be an integer, got {clip(value)!r}"
        ) from None


def _flag(name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise InvalidArgumentError(f"scripted model: {name} must be 1 or 0, got {clip(value)!r}")

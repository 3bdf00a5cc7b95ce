"""The scripted model: offline answers for tests and demos, deterministic or deliberately not.

Exactly one mode per instance:

- ``answers`` (from ``file=PATH``): the answers in order, one per call. A ``.json`` file holds a
  JSON array of strings; any other file holds one answer per line (blank lines skipped, so use
  JSON for empty or multi-line answers). When the answers run out the next call raises
  UnavailableError rather than cycling: a test that makes more model calls than it scripted
  fails loudly instead of quietly reusing an answer.
- ``seed`` (the default, seed 0): the answer is ``scripted-<seed>-<16 hex>``, a SHA-256 of the
  seed and the whole request (model, messages, params, tools, tool choice). The same request
  and seed always get the same answer, in any process.
- ``nondeterministic``: a fresh random answer on every call, even for the same request. A
  replay that wrongly calls the model therefore cannot reproduce the journal by accident.

``delay=SECONDS`` (any mode) makes each answer take that long, spread over its deltas: a
slow model for demos and crash tests that kill a process while a call is in flight.

Invariants: ``calls`` counts every ``complete`` call, including one that fails on an exhausted
script (so a test can assert that replay made zero calls); the role is ``assistant``; no usage
is reported; a given ``on_delta`` receives the answer in word-sized pieces whose concatenation
equals the completion text.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agentsessions.controller.spi import Completion, ModelRequest
from agentsessions.errors import InvalidArgumentError, UnavailableError
from agentsessions.v1.model import text_message

OPTIONS = ("file", "seed", "nondeterministic", "delay")
MAX_DELAY_SECONDS = 600.0
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_PIECES = re.compile(r"\S+\s*|\s+")


class ScriptedModel:
    """An offline model whose answers come from a script, a seed, or randomness."""

    def __init__(
        self,
        *,
        answers: Sequence[str] | None = None,
        seed: int = 0,
        nondeterministic: bool = False,
        source: str = "",
        delay: float = 0.0,
    ) -> None:
        if answers is not None and nondeterministic:
            raise InvalidArgumentError("scripted model: answers and nondeterministic exclude")
        self.answers = None if answers is None else tuple(answers)
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
                f"scripted model: unknown option {unknown[0]!r} (known: {', '.join(OPTIONS)})"
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
        text = self._answer(request, call)
        pieces = _PIECES.findall(text) or [""]
        for piece in pieces:
            if self.delay:  # a slow model, spread over the stream (demos, crash tests)
                time.sleep(self.delay / len(pieces))
            if on_delta is not None and piece:
                on_delta(piece)
        return Completion(message=dict(text_message("assistant", text)))

    def _answer(self, request: ModelRequest, call: int) -> str:
        if self.answers is not None:
            if call > len(self.answers):
                where = f" in {self.source}" if self.source else ""
                raise UnavailableError(
                    f"scripted model: call {call} but only {len(self.answers)} answers{where}",
                    hint="add answers to the script",
                )
            return self.answers[call - 1]
        if self.nondeterministic:
            return f"scripted-random-{secrets.token_hex(8)}"
        return f"scripted-{self.seed}-{request_digest(request, self.seed)[:16]}"

    def __repr__(self) -> str:
        if self.answers is not None:
            return f"ScriptedModel(answers={len(self.answers)}, source={self.source!r})"
        if self.nondeterministic:
            return "ScriptedModel(nondeterministic=True)"
        return f"ScriptedModel(seed={self.seed})"


def _delay(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= MAX_DELAY_SECONDS:
        raise InvalidArgumentError(
            f"scripted model: delay must be 0..{MAX_DELAY_SECONDS:g} seconds, got {text!r}"
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


def load_answers(path: Path) -> list[str]:
    """The answers in ``path``: a JSON array of strings (``.json``) or one per line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgumentError(f"scripted model: cannot read {path}: {exc}") from exc
    if path.suffix.lower() != ".json":
        return [line for line in text.splitlines() if line.strip()]
    try:
        answers = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(f"scripted model: {path} is not JSON: {exc}") from exc
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise InvalidArgumentError(f"scripted model: {path} must hold a JSON array of strings")
    return answers


def _seed(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise InvalidArgumentError(
            f"scripted model: seed must be an integer, got {value!r}"
        ) from None


def _flag(name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise InvalidArgumentError(f"scripted model: {name} must be 1 or 0, got {value!r}")

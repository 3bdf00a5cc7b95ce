"""The operator's model catalog: plain names for model specs, and the guard a caller's turn
passes before a model is made or called.

An operator declares the models a deployment offers (``serve --model NAME=SPEC``, or a
``[models.NAME]`` table with ``spec = "..."`` in the configuration file); a session, a
turn or a harness then names one by NAME, and the engine makes the model from its SPEC.
The journal and the session's metadata record the NAME, so a caller reading them never
sees the operator's spec (a base URL, a file), and resume and replay find the model
through the catalog of whichever engine opens the session.

Invariants:
- a NAME is a plain name (letters, digits, ``.``, ``_``, ``-``; at most 64 bytes) and is
  never a provider's name (``echo``, ``scripted``, ``openai`` or a registered one), so a
  catalog can never change what a spec already means; a SPEC is a spec, never a NAME;
- :func:`guard_model` runs the check the current call installed with :func:`guarded`
  (none: nothing is checked). The engine calls it before every model it makes or calls,
  so a check a server installs for a token holder's call covers every spec the turn
  reaches: the request's, the session's recorded one, a harness's own (a chat config's
  ``model``, a remote harness's model call). It rides in a context variable, which the
  engine's turn threads copy;
- :func:`clip` is how a message quotes caller text: at most :data:`QUOTE_LIMIT` bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from agentsessions.errors import AgentSessionsError, InvalidArgumentError
from agentsessions.valueclass import replace, value

if TYPE_CHECKING:
    from agentsessions.controller.spi import Completion, ModelProvider, ModelRequest

QUOTE_LIMIT = 200  # bytes of caller text an error message may quote
NAME_LIMIT = 64
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
RESERVED = ("echo", "scripted", "openai")

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
_GUARD: ContextVar[Callable[[str], None] | None] = ContextVar("agentsessions_model_guard")


def clip(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, marked when cut (how many bytes it had)."""
    raw = text.encode("utf-8", "surrogateescape")
    if len(raw) <= limit:
        return text
    head = raw[: max(0, limit - 40)].decode("utf-8", "ignore")
    return f"{head}...({len(raw)} bytes)"


class ModelCatalog(Mapping[str, str]):
    """NAME -> SPEC, checked when made (see the module docstring). Immutable."""

    def __init__(self, entries: Mapping[str, str] | None = None) -> None:
        self._entries: dict[str, str] = {}
        for name, spec in (entries or {}).items():
            self._entries[check_name(name)] = _check_spec(name, spec)

    def __getitem__(self, name: str) -> str:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:  # names only: a spec may hold a URL the operator keeps
        return f"ModelCatalog({sorted(self._entries)})"

    def resolve(self, name: str) -> str:
        """The spec ``name`` stands for: its catalog SPEC, else ``name`` itself."""
        return self._entries.get(name.strip(), name)

    def merged(self, over: Mapping[str, str]) -> ModelCatalog:
        """This catalog with ``over``'s entries added (``over`` wins on a clash)."""
        return ModelCatalog({**self._entries, **over})

    @classmethod
    def parse(cls, items: Iterable[str], flag: str = "--model") -> ModelCatalog:
        """The catalog of ``NAME=SPEC`` items (a NAME given twice is refused)."""
        entries: dict[str, str] = {}
        for item in items:
            name, _eq, spec = item.partition("=")
            name = name.strip()
            if name in entries:
                raise InvalidArgumentError(f"{flag}: model {clip(name)!r} defined twice")
            entries[name] = spec.strip()
        return cls(entries)


@value(frozen=True)
class CatalogModel:
    """The provider a catalog SPEC made, called as if the request named that SPEC: a
    provider reads a request's model as its own (an ``openai:`` spec sends its model's
    name), which a catalog NAME is not. Its errors name no URL and not the SPEC: a caller
    who named the model sees them, and the SPEC is the operator's."""

    inner: ModelProvider
    spec: str

    def complete(
        self, request: ModelRequest, on_delta: Callable[[str], None] | None = None
    ) -> Completion:
        """The inner provider's completion of ``request`` with its model set to the SPEC."""
        try:
            return self.inner.complete(replace(request, model=self.spec), on_delta=on_delta)
        except AgentSessionsError as exc:  # the same error (class, fields), its text private
            exc.message, exc.hint = self._private(exc.message), self._private(exc.hint)
            exc.args = (exc.message,)
            raise

    def _private(self, text: str) -> str:
        return _URL.sub("<the operator's endpoint>", text.replace(self.spec, "<its spec>"))


def is_entry(item: str) -> bool:
    """Whether ``item`` reads as ``NAME=SPEC`` rather than as a spec: a spec's first ``=``
    always follows a ``:`` (``scripted:seed=7``), a catalog entry's follows a plain name."""
    name, eq, _spec = item.partition("=")
    return bool(eq) and _NAME.fullmatch(name.strip()) is not None


def check_name(name: str) -> str:
    """``name`` if it may name a catalog model (see the module docstring), else
    InvalidArgumentError."""
    from agentsessions.models import MODELS

    if len(name) > NAME_LIMIT or not _NAME.fullmatch(name):
        raise InvalidArgumentError(
            f"model name {clip(name)!r}: expected a plain name (letters, digits, '.', '_', '-';"
            f" at most {NAME_LIMIT} bytes)",
            hint="for example fast=openai:gpt-4o-mini, or [models.fast] in the config file",
        )
    if name in RESERVED or name in MODELS.names():
        raise InvalidArgumentError(
            f"model name {name!r} is a provider's name: a catalog name must not shadow it",
            hint="choose another name, for example fast",
        )
    return name


def _check_spec(name: str, spec: str) -> str:
    """``spec`` if it parses as a model spec (a catalog name is not one: no chains)."""
    from agentsessions.models import parse_spec

    if not spec.strip():
        raise InvalidArgumentError(
            f"model {name!r} has no spec", hint=f"for example {name}=openai:gpt-4o-mini"
        )
    try:
        parse_spec(spec)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"model {name!r}: {exc.message}", hint=exc.hint) from None
    return spec.strip()


@contextmanager
def guarded(check: Callable[[str], None]) -> Iterator[None]:
    """Within: :func:`guard_model` runs ``check`` on every model spec the engine makes or
    calls (including on turn threads started within, which copy the context)."""
    token = _GUARD.set(check)
    try:
        yield
    finally:
        _GUARD.reset(token)


def guard_model(spec: str) -> None:
    """Run the current call's model check on ``spec`` (nothing when none is installed)."""
    check = _GUARD.get(None)
    if check is not None:
        check(spec)

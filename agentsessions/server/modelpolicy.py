"""What model a token holder may name: a caller selects, the operator defines (issue 18).

A model spec can name a server-side file (``scripted:file=...``), a URL the server sends
the API key to (``openai:...,base_url=...``) or any provider option. So a principal with
``projects`` (a token holder) may name only:

- a NAME of the operator's catalog (``serve --model NAME=SPEC``, ``[models.NAME]``);
- a registered provider's name without options (``echo``, ``scripted``, a plugin's);
- ``""`` (the session's model, else the server's default);
- ``scripted:`` with options other than ``file`` (``scripted:seed=3``): offline, reads
  nothing;
- the server's own default model (``serve --model SPEC``): the operator chose it.

Anything else is PERMISSION_DENIED before anything is read or sent, naming the models
offered. The check runs on what the request carries (:meth:`ModelPolicy.check`) and, as
the engine's model guard (:meth:`ModelPolicy.guarding`), on every spec a token holder's
turn reaches: the session's recorded model (an imported session's), a harness's own
choice (a chat config's ``model``, a remote harness's model call). The principal of a
``--no-auth`` listener (``projects=None``) is the operator: nothing is checked for it.

Invariants: the check reads no file and opens no connection; its error quotes at most 200
bytes of the caller's spec. The models package is imported when a check first runs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from agentsessions.errors import InvalidArgumentError, PermissionDeniedError

HINT = "the operator offers models by name: agentsessions serve --model NAME=SPEC"


class ModelPolicy:
    """The models a token holder may name on one server (see the module docstring)."""

    def __init__(self, catalog: Mapping[str, str] | None = None, default: str = "") -> None:
        self.catalog = dict(catalog or {})
        self.default = default.strip()

    def offered(self) -> list[str]:
        """What a caller may name, for the error: the catalog's names, then the offline ones."""
        from agentsessions.models import MODELS

        return [*sorted(self.catalog), *sorted(MODELS.names()), "scripted:seed=N"]

    def allows(self, spec: str) -> bool:
        """Whether a token holder may name ``spec`` (InvalidArgumentError for a malformed
        ``scripted:`` spec, whose options cannot be told)."""
        from agentsessions.models import MODELS, parse_spec

        name = spec.strip()
        if name in ("", self.default) or name in self.catalog or name in MODELS.names():
            return True
        if not name.startswith("scripted:"):
            return False
        return "file" not in parse_spec(name).options

    def check(self, spec: str | None, field: str = "model") -> None:
        """PermissionDeniedError unless a token holder may name ``spec`` (None: none given)."""
        if spec is None:
            return
        try:
            allowed = self.allows(spec)
        except InvalidArgumentError:
            allowed = False  # a malformed spec a provider would parse: refused unparsed
        if not allowed:
            from agentsessions.models.catalog import clip

            raise PermissionDeniedError(
                f"{field} {clip(spec)!r} is not offered to callers of this server "
                f"(offered: {', '.join(self.offered())})",
                hint=HINT,
            )

    @contextmanager
    def guarding(self) -> Iterator[None]:
        """Within: every model the engine makes or calls is checked (see the module doc)."""
        from agentsessions.models.catalog import guarded

        with guarded(self.check):
            yield

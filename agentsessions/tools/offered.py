"""The tools a daemon offers its callers (``serve --tools FILE``), and a caller's workload
made into the effective one the engine records: a caller selects, the operator defines.

The operator's file is a workload (:mod:`.workload`, the same TOML) with one more key per
tool, read only here::

    [tools.log]
    mediation = "mediated"
    executor = "append_line"
    config = { path = "/srv/agent/log.txt" }
    caller_config = []            # the config keys a caller may set (default: none)

It is validated whole when the daemon starts (:func:`load_offered`: a WorkloadError, exit 2,
naming the file, the table and the key). ``caller_config`` must be a list of config keys
the tool's executor reads (any key, for an executor whose config is open: a ``unix://``
server's, a ``python:`` function's); a ``reported`` tool has no executor, so none.

A caller's workload (a token holder's, as it crossed the wire: :meth:`OfferedTools.effective`)
may, for each ``[tools.NAME]``:

- select an offered tool by NAME, and set its ``description`` and ``parameters`` (what the
  model is shown), raise its ``mediation`` (reported < mediated < approval; lowering it is
  refused: an operator's approval gate stays a gate), and set the ``config`` keys the
  operator lists in ``caller_config`` (over the operator's own config; any other key is
  refused);
- declare a ``reported`` tool of its own under a NAME not offered: ``mediation =
  "reported"`` with ``description``/``parameters`` only. Such a tool names nothing on the
  server and the server runs nothing for it: the harness runs it and reports the result
  (the built-in harnesses run none and answer a call of it with an error; a caller's own
  registered harness runs it in its own process), so refusing it would protect nothing and
  would stop a remote harness from using its own tools.

It may never define an executor: an ``executor`` key of any kind (``python:``, ``unix://``,
``mcp:``, even a built-in name such as ``append_line``), ``caller_config``, or a NAME the
operator does not offer (other than a caller's own reported tool) is PermissionDeniedError
naming the tool. Its ``[session]`` table works within the offered tools: ``tool_components``
names tools of the effective workload; ``components`` (the harnesses that may work in the
conversation) must stay within the operator's list when the operator gives one. A key the
caller leaves out of ``[session]`` is the operator's (``tool_components`` narrowed to the
tools selected). ``[listed]`` tables are the server's to write (:mod:`.listing`).

The effective workload is written as TOML (:mod:`.tomltext`) and validated as any workload
is; that text is what the engine records with the session, so a resume, an approval or a
replay runs the operator's executors with the config as merged then. Error texts quote at
most :data:`CLIP` characters of a caller's names, and an error of the merged workload
(which may quote a caller's value) at most :data:`ERROR_CLIP` characters.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentsessions.errors import PermissionDeniedError, WorkloadError

from .configschema import ConfigSchema
from .tomltext import dumps
from .workload import MEDIATIONS, SESSION_KEYS, Workload, parse_workload

OPERATOR_KEYS = ("caller_config",)
CALLER_KEYS = ("mediation", "description", "parameters", "config")
RANK = {"reported": 0, "mediated": 1, "approval": 2}
CALLER = "from the caller"  # a caller's workload has no file name to show
CLIP = 64
ERROR_CLIP = 240  # a merged workload's error, which may quote a caller's value
HINT = (
    "select a tool this server offers by name ([tools.NAME] without executor); "
    "the operator defines them with: agentsessions serve --tools FILE"
)


@dataclass(frozen=True)
class Offer:
    """One offered tool: the operator's table (without ``caller_config``) and its limits."""

    name: str
    table: Mapping[str, Any]
    caller_config: tuple[str, ...] = ()

    @property
    def mediation(self) -> str:
        """The operator's tier: a caller may raise it, never lower it."""
        return str(self.table["mediation"])


@dataclass(frozen=True)
class OfferedTools:
    """The operator's tools (see the module docstring); ``workload`` is the file validated."""

    path: str
    offers: Mapping[str, Offer]
    session: Mapping[str, Any]
    workload: Workload

    def names(self) -> str:
        """The offered tool names, for errors and hints."""
        return ", ".join(sorted(self.offers)) or "none"

    def effective(self, text: str) -> str:
        """The workload a caller's TOML ``text`` amounts to, as TOML the engine can load:
        PermissionDeniedError for what the caller may not do, WorkloadError for text that
        is not a workload."""
        data = _toml(text, CALLER)
        extra = sorted(set(data) - {"tools", "session"})
        if extra:
            why = "written by the server" if extra[0] == "listed" else "unknown table or key"
            raise _bad(
                CALLER,
                "",
                _clip(extra[0]),
                f"{why} (a caller's workload has [tools.NAME] and [session])",
            )
        tables = data.get("tools", {})
        if not isinstance(tables, dict):
            raise _bad(CALLER, "", "tools", "must be a table of [tools.NAME] tables")
        tools = {name: self._tool(name, body) for name, body in tables.items()}
        doc: dict[str, Mapping[str, Any]] = {"tools": tools}
        session = self._session(data.get("session", {}), tools)
        if session:
            doc["session"] = session
        merged = dumps(doc)
        try:
            parse_workload(merged, CALLER)  # the whole of it, as the engine will load it
        except WorkloadError as exc:  # it may quote a caller's value (a bad config value)
            raise _clipped(exc) from None
        return merged

    def _tool(self, name: str, body: Any) -> dict[str, Any]:
        """The effective ``[tools.NAME]`` for the caller's ``body``."""
        shown = _clip(name)
        where = f"workload {CALLER}: [tools.{shown}]"
        if not isinstance(body, dict):
            raise _bad(CALLER, f"tools.{shown}", "", "must be a table")
        if "executor" in body:
            raise _denied(
                f"{where} executor: a caller's workload may not define an executor "
                f"(this server offers: {self.names()})",
                shown,
            )
        for key in OPERATOR_KEYS:
            if key in body:
                raise _denied(f"{where} {key}: the operator's to set, not a caller's", shown)
        extra = sorted(set(body) - set(CALLER_KEYS))
        if extra:
            raise _bad(CALLER, f"tools.{shown}", _clip(extra[0]),
                       f"unknown key (a caller may set: {', '.join(CALLER_KEYS)})")  # fmt: skip
        offer = self.offers.get(name)
        if offer is None:
            if body.get("mediation") == "reported" and "config" not in body:
                return dict(body)  # the caller's own in-harness tool (module docstring)
            raise _denied(
                f"{where}: this server offers no tool {shown!r} (offered: {self.names()}; "
                'a tool your harness runs itself is declared with mediation = "reported")',
                shown,
            )
        return self._selected(offer, body, where, shown)

    def _selected(
        self, offer: Offer, body: Mapping[str, Any], where: str, shown: str
    ) -> dict[str, Any]:
        merged = dict(offer.table)
        tier = body.get("mediation", offer.mediation)
        if tier not in RANK:
            raise _bad(CALLER, f"tools.{shown}", "mediation",
                       f"must be one of {', '.join(MEDIATIONS)}")  # fmt: skip
        if RANK[tier] < RANK[offer.mediation]:
            raise _denied(
                f"{where} mediation: {tier!r} is lower than the offered {offer.mediation!r} "
                "(a caller may raise mediation, never lower it: reported < mediated < approval)",
                shown,
                f'leave mediation out, or set one at least "{offer.mediation}"',
            )
        if tier != "reported" and not merged.get("executor"):
            raise _denied(
                f"{where} mediation: offered as 'reported' (the harness runs it): this server "
                "has no executor to mediate it",
                shown,
                'leave mediation out, or set "reported"',
            )
        merged["mediation"] = tier
        for key in ("description", "parameters"):
            if key in body:
                merged[key] = body[key]
        config = body.get("config")
        if config is not None:
            if not isinstance(config, dict):
                raise _bad(CALLER, f"tools.{shown}", "config", "must be a table")
            allowed = ", ".join(offer.caller_config) or "none"
            for key in sorted(config):
                if key not in offer.caller_config:
                    raise _denied(
                        f"{where} config.{_clip(key)}: not a key the operator lets a caller "
                        f"set (allowed: {allowed})",
                        shown,
                        "the operator allows config keys per tool with caller_config",
                    )
            merged["config"] = {**dict(merged.get("config", {})), **config}
        return merged

    def _session(self, body: Any, tools: Mapping[str, Any]) -> dict[str, Any]:
        """The effective ``[session]``: the caller's keys, the operator's for the rest."""
        if not isinstance(body, dict):
            raise _bad(CALLER, "", "session", "must be a table")
        out = dict(body)
        theirs = self.session.get("components")
        if "components" not in out and theirs is not None:
            out["components"] = list(theirs)
        elif theirs is not None and isinstance(out["components"], list):
            beyond = [c for c in out["components"] if c not in theirs]
            if beyond:
                raise PermissionDeniedError(
                    f"workload {CALLER}: [session] components: harness "
                    f"{_clip(str(beyond[0]))!r} may not work in the conversation here "
                    f"(the operator allows: {', '.join(theirs)})",
                    hint="name only those, or leave components out",
                )
        if "tool_components" not in out and "tool_components" in self.session:
            stores = [n for n in self.session["tool_components"] if n in tools]
            if stores:
                out["tool_components"] = stores
        return {key: out[key] for key in (*SESSION_KEYS, *sorted(set(out) - set(SESSION_KEYS)))
                if key in out}  # fmt: skip


def load_offered(path: str | Path) -> OfferedTools:
    """Read and validate the operator's file at ``path`` (see the module docstring)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(f"workload {path}: cannot read it: {exc}", path=str(path)) from None
    return parse_offered(text, str(path))


def parse_offered(text: str, path: str = "(offered tools)") -> OfferedTools:
    """Validate the operator's TOML ``text``; ``path`` names it in errors."""
    data = _toml(text, path)
    tables = data.get("tools")
    limits: dict[str, Any] = {}
    if isinstance(tables, dict):
        for name, body in tables.items():
            if isinstance(body, dict) and "caller_config" in body:
                limits[name] = body.pop("caller_config")
    try:
        stripped = dumps(data) if limits else text
    except (TypeError, AttributeError):  # not a workload's shape: parse_workload says where
        stripped = text
    workload = parse_workload(stripped, path)
    offers = {}
    for name, body in (tables or {}).items():
        keys = _caller_config(path, workload, name, limits.get(name, []))
        offers[name] = Offer(name, dict(body), keys)
    session = data.get("session", {})
    return OfferedTools(path, offers, dict(session), workload)


def _caller_config(path: str, workload: Workload, name: str, value: Any) -> tuple[str, ...]:
    """Tool ``name``'s ``caller_config``: config keys its executor reads."""
    table, key = f"tools.{name}", "caller_config"
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _bad(path, table, key, "must be a list of config key names")
    if not value:
        return ()
    tool = workload.tools[name]
    if not tool.executor:
        raise _bad(path, table, key, "a reported tool has no executor here: no config to allow")
    schema = getattr(workload.executor(tool.executor), "config_schema", None)
    if isinstance(schema, ConfigSchema) and not schema.open:
        for each in value:
            if each not in schema.keys:
                known = ", ".join(sorted(schema.keys)) or "none"
                raise _bad(path, table, key,
                           f"{each!r} is not a config key of executor {tool.executor!r} "
                           f"(known: {known})")  # fmt: skip
    return tuple(dict.fromkeys(value))


def _toml(text: str, path: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise WorkloadError(f"workload {path}: not valid TOML: {exc}", path=path) from None


def _clip(text: str) -> str:
    """At most :data:`CLIP` characters of caller text in an error."""
    return text if len(text) <= CLIP else text[:CLIP] + "..."


def _clipped(exc: WorkloadError) -> WorkloadError:
    """``exc`` with its message cut to :data:`ERROR_CLIP` characters and its fields (a
    caller's tool name in ``table``) to :data:`CLIP`."""
    message = exc.message
    if len(message) > ERROR_CLIP:
        message = message[:ERROR_CLIP] + "..."
    fields = {k: _clip(v) if isinstance(v, str) else v for k, v in exc.fields.items()}
    return WorkloadError(message, hint=exc.hint, **fields)


def _denied(message: str, tool: str, hint: str = HINT) -> PermissionDeniedError:
    return PermissionDeniedError(message, hint=hint, tool=tool)


def _bad(path: str, table: str, key: str, why: str) -> WorkloadError:
    where = f"[{table}] " if table else ""
    where += f"{key}: " if key else ""
    return WorkloadError(f"workload {path}: {where}{why}", path=path, table=table, key=key)

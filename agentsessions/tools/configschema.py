"""What an executor accepts in a tool's ``config`` table: its keys, their types, which are
required; checked when the workload loads, so a typo is refused before any turn runs.

Each executor declares one :class:`ConfigSchema` as its ``config_schema`` attribute
(``append_line``: ``path``; ``mcp:``: ``tool``, ``startup_timeout``, ``timeout``; ...). The
workload loader (:mod:`.workload`) checks every ``[tools.NAME] config`` against its
executor's schema: an unknown key, a missing required one or a value of the wrong type is a
WorkloadError (exit 2) naming the file, the tool and the key. A schema is ``open`` when the
executor hands the config on to code that reads keys of its own (a ``unix://`` server gets
the config as is; a ``python:`` function may declare its own schema, else its config is its
business): then only the keys it names are checked. An executor that declares no schema (a
plugin registered before schemas existed) has its config passed on unchecked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentsessions.errors import WorkloadError
from agentsessions.valueclass import field, value


@value(frozen=True)
class ConfigKey:
    """One key of a config table: its TOML type, and whether it must be there."""

    kind: str  # "string", "number" (int or float), "integer", "table", "boolean"
    required: bool = False
    positive: bool = False  # a number that must be > 0 (a timeout, a size)
    doc: str = ""  # what the key means, for the error line

    def problem(self, value: Any) -> str:
        """Why ``value`` does not fit ("" when it does)."""
        ok = _KINDS[self.kind](value)
        if ok and self.positive and value <= 0:
            ok = False
        if ok:
            return ""
        want = f"a positive {self.kind}" if self.positive else f"a {self.kind}"
        return f"must be {want}; got {value!r}"


_KINDS = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "table": lambda v: isinstance(v, dict),
}


@value(frozen=True)
class ConfigSchema:
    """The config keys one executor reads (see the module docstring)."""

    keys: Mapping[str, ConfigKey] = field(default_factory=dict)
    open: bool = False  # other keys are passed on to code that reads them

    def __post_init__(self) -> None:
        for name, key in self.keys.items():
            if key.kind not in _KINDS:
                raise ValueError(f"config key {name!r}: unknown kind {key.kind!r}")

    def check(self, path: str, tool: str, executor: str, config: Mapping[str, Any]) -> None:
        """WorkloadError naming ``path``, ``[tools.TOOL]`` and the key unless ``config`` fits."""
        known = ", ".join(sorted(self.keys)) or "none"
        if not self.open:
            for name in sorted(config):
                if name not in self.keys:
                    raise _bad(
                        path, tool, name, f"unknown key for executor {executor!r} (known: {known})"
                    )
        for name, key in sorted(self.keys.items()):
            if name not in config:
                if key.required:
                    why = f"executor {executor!r} needs it" + (f" ({key.doc})" if key.doc else "")
                    raise _bad(path, tool, name, why)
                continue
            problem = key.problem(config[name])
            if problem:
                raise _bad(path, tool, name, problem)


OPEN = ConfigSchema(open=True)
"""Any keys: the config belongs to the code the executor calls."""


def _bad(path: str, tool: str, key: str, why: str) -> WorkloadError:
    table = f"tools.{tool}"
    return WorkloadError(
        f"workload {path}: [{table}] config.{key}: {why}",
        path=path,
        table=table,
        key=f"config.{key}",
    )

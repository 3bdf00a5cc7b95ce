"""A workload as TOML text again: the writer :mod:`.offered` makes an effective workload with.

``tomllib`` reads TOML but writes none, and the engine takes a workload as text (it records
that text, and a resume or replay parses it again), so a workload built from two others
(the operator's and a caller's) is written here. The output is TOML 1.0 that ``tomllib``
reads back to the same values: one ``[a."b"]`` header per table of tables, every key quoted,
every other table inline on one line, strings as basic strings with control characters
escaped. Only what ``tomllib`` produces is accepted (str, bool, int, float, list, dict,
date and time values); anything else is a TypeError, a bug of the caller of this module.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from typing import Any


def dumps(doc: Mapping[str, Mapping[str, Any]]) -> str:
    """``doc`` as TOML: each top-level key a table; a table whose values are all tables
    (``tools``) is written as one ``[key."name"]`` section per entry."""
    sections: list[str] = []
    for key, table in doc.items():
        if table and all(isinstance(v, Mapping) for v in table.values()):
            for name, body in table.items():
                sections.append(_section(f"{_key(key)}.{_key(name)}", body))
        else:
            sections.append(_section(_key(key), table))
    return "\n".join(sections)


def _section(header: str, body: Mapping[str, Any]) -> str:
    lines = [f"[{header}]"]
    lines.extend(f"{_key(k)} = {_value(v)}" for k, v in body.items())
    return "\n".join(lines) + "\n"


def _key(key: str) -> str:
    return string(str(key))


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return string(value)
    if isinstance(value, datetime.date | datetime.time):  # datetime is a date
        return value.isoformat()
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"not a TOML value: {type(value).__name__}")


def string(text: str) -> str:
    """``text`` as a TOML basic string (control characters and DEL escaped; a lone
    surrogate, which UTF-8 cannot carry, replaced)."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    out = ['"']
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)

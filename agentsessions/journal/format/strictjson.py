"""Strict JSON decoding: exactly RFC 8259 in strict UTF-8, or a FormatError naming why.

No NaN or Infinity literals, no number that overflows a double, no lone surrogate (escaped
or not); anything else is :class:`~agentsessions.errors.FormatError` ("invalid JSON: ...").
:func:`agentsessions.journal.format.canonical.loads` decodes with msgspec when it is
installed and gives the same verdicts and values (its tests hold the two together); this
module is that decoder's pure half, with no msgspec import, for a reader of a few small
documents (``session.json``: :mod:`agentsessions.journal.stores.metafile`) whose process
need not load msgspec at all (importing it costs about as much as starting Python).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from agentsessions.errors import FormatError

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    x = float(text)
    if x in (math.inf, -math.inf):
        raise ValueError("Number out of range")
    return x


def pure_loads(text: str) -> Any:
    """The value of the JSON document ``text``; ValueError (or UnicodeError) if it is not
    strict JSON (see the module docstring)."""
    value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    if _SURROGATE_ESCAPE.search(text):
        # msgspec refuses an escaped lone surrogate; json does not. Re-encoding finds any.
        json.dumps(value, ensure_ascii=False).encode()
    return value


def loads(
    data: bytes | bytearray | memoryview | str, decode: Callable[[Any], Any] | None = None
) -> Any:
    """Decode one JSON document from strict UTF-8 bytes (or str); FormatError if invalid.

    ``decode``: a faster decoder of the same verdicts (msgspec's, from ``canonical``),
    else :func:`pure_loads`."""
    try:
        if isinstance(data, str):
            data = data.encode()
        if decode is not None:
            return decode(data)
        return pure_loads(bytes(data).decode())
    except UnicodeError:
        raise FormatError("invalid JSON: not valid UTF-8 (or a lone surrogate)") from None
    except RecursionError:
        raise FormatError("invalid JSON: nested too deeply") from None
    except ValueError as exc:  # json.JSONDecodeError and msgspec.DecodeError are ValueErrors
        raise FormatError(f"invalid JSON: {' '.join(str(exc).split())}") from None

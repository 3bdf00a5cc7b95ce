"""Numbers in the ``agentsessions.v1`` vocabulary: proto3-JSON / I-JSON (RFC 7493) rules.

A JSON number is an IEEE double, as in a ``google.protobuf.Struct``. These rules are the
vocabulary's, not the journal's: the schema, the message constructors and the journal's
canonical JSON (JCS prints numbers the ECMAScript way, :func:`format_number`) all use them.
"""

from __future__ import annotations

import math
from typing import Any

from agentsessions.errors import AgentSessionsError, InvalidArgumentError

MAX_SAFE_INT = 2**53 - 1
"""Largest integer every IEEE double consumer (and JCS) represents exactly."""

JS_EXP_LIMIT = 10**21
"""ECMAScript prints doubles at or above 1e21 (in magnitude) with an exponent."""


def format_number(x: float) -> str:
    """ECMAScript ``Number.prototype.toString`` of a finite double, as JCS requires.

    ``repr`` already yields the shortest round-tripping digits (the digits ECMAScript picks);
    only the placement of the decimal point and exponent differs.
    """
    if x - x:  # NaN or an infinity (x - x is 0.0 for every finite x)
        raise InvalidArgumentError(f"JSON cannot represent the number {x!r}")
    if x == 0:
        return "0"
    text = repr(x)
    if "e" not in text:  # 1e-4 <= |x| < 1e16: Python and ECMAScript agree but for "n.0"
        return text[:-2] if text.endswith(".0") else text
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exp_text = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    point = len(whole) + (int(exp_text) if exp_text else 0) - (len(whole + frac) - len(digits))
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= point <= 21:
        out = digits + "0" * (point - k)
    elif 0 < point <= 21:
        out = digits[:point] + "." + digits[point:]
    elif -6 < point <= 0:
        out = "0." + "0" * -point + digits
    else:
        exp = point - 1
        head = digits[0] + ("." + digits[1:] if k > 1 else "")
        out = f"{head}e{'+' if exp >= 0 else '-'}{abs(exp)}"
    return sign + out


def json_number(x: int | float) -> int | float:
    """The value a JCS round trip gives ``x`` under float64 semantics (as Go's Struct does).

    Integral results below 1e21 come back as ``int`` (spelled as JCS prints them), everything
    else as ``float``. Raises InvalidArgumentError for NaN, infinities and ints beyond a double.
    """
    if type(x) is int and -MAX_SAFE_INT <= x <= MAX_SAFE_INT:
        return x
    try:
        d = float(x)
    except OverflowError:
        raise InvalidArgumentError(f"the number {x} does not fit a 64-bit float") from None
    if d != d or d in (math.inf, -math.inf):
        raise InvalidArgumentError(f"JSON cannot represent the number {x!r}")
    if d.is_integer() and abs(d) < JS_EXP_LIMIT:
        return int(d) if abs(d) <= MAX_SAFE_INT else int(format_number(d))
    return d


def ijson(
    value: Any, *, error: type[AgentSessionsError] = InvalidArgumentError, path: str = "value"
) -> Any:
    """A copy of a JSON-shaped value under I-JSON (RFC 7493) semantics: numbers are doubles.

    This is what a ``google.protobuf.Struct`` holds and what the reference hashes: every number
    becomes :func:`json_number` of itself (ints beyond 2**53 round to the nearest double);
    tuples become lists. Raises ``error`` naming ``path`` for NaN, infinities, non-string
    keys and non-JSON types.
    """
    t = type(value)
    if t is str or t is bool or value is None:
        return value
    if t is int or t is float:
        try:
            return json_number(value)
        except InvalidArgumentError as exc:
            raise error(f"{path}: {exc}") from None
    if t is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise error(f"{path}: object keys must be strings, got {type(k).__name__}")
            out[k] = ijson(v, error=error, path=f"{path}.{k}")
        return out
    if t is list or t is tuple:
        return [ijson(v, error=error, path=f"{path}[{i}]") for i, v in enumerate(value)]
    raise error(f"{path}: {t.__name__} is not a JSON value")


__all__ = ["JS_EXP_LIMIT", "MAX_SAFE_INT", "format_number", "ijson", "json_number"]

"""JSON inside an HTML ``<script type="application/json">`` element, and nothing else.

Invariant: the bytes :func:`script_json` returns can never end the element, open a comment
or start markup, whatever the strings inside hold. JSON puts ``<``, ``>`` and ``&`` only
inside strings, where ``\\u003c``-style escapes mean the same characters, so the escaped
text parses to the same value with ``JSON.parse``. U+2028 and U+2029 are escaped too: they
are legal in JSON, and escaping them keeps the text valid wherever a tool treats it as
JavaScript.
"""

from __future__ import annotations

import json
from typing import Any

_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def escape_json(text: bytes) -> bytes:
    """UTF-8 JSON ``text`` made safe inside a script element (same value when parsed)."""
    for raw, escaped in _ESCAPES:
        if raw in text:
            text = text.replace(raw, escaped)
    return text


def dumps(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON, escaped for a script element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return escape_json(text.encode())


def _is_name(text: str) -> bool:
    return bool(text) and text.replace("-", "").isalnum() and text.isascii()


def script_json(element_id: str, body: bytes, css_class: str = "") -> bytes:
    """A ``<script type="application/json">`` element holding already escaped ``body``.

    ``element_id`` and ``css_class`` are ours (fixed names and numbers), never user text.
    """
    if not _is_name(element_id) or (css_class and not _is_name(css_class)):
        raise ValueError(f"bad element id or class {element_id!r} {css_class!r}")  # our bug
    cls = f' class="{css_class}"' if css_class else ""
    head = f'<script type="application/json" id="{element_id}"{cls}>'
    return head.encode() + body + b"</script>\n"

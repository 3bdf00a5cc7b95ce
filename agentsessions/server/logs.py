"""The daemon's log: ``serve --log-format text|json`` on stderr, one line per record.

Every line names the request it was written for (``request_id``: the call's own, or the
one the thread inherited from the call that started its turn), so an operator can follow
one request through the service, the engine and the store. A record's ``fields`` (the
request line of :mod:`.observe`) are written as keys; nothing else of the record is, and
the package never logs a payload, a key, a token or a fence value.

- ``json``: one JSON object a line: ``time`` (UTC, RFC 3339), ``level``, ``logger``,
  ``msg``, the fields, ``request_id`` when there is one, ``exc`` for a traceback;
- ``text``: ``TIME LEVEL LOGGER MSG key=value ...`` (values with spaces quoted as JSON).
- ``none`` (the default): no handler is installed; Python's last-resort handler still prints
  warnings and errors, as before this option existed.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, TextIO

from agentsessions.telemetry import REQUEST_ID

FORMATS = ("none", "text", "json")
LOGGER = "agentsessions"


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields = dict(getattr(record, "fields", None) or {})
    rid = REQUEST_ID.get()
    if rid and "request_id" not in fields:
        fields["request_id"] = rid
    return fields


def _time(record: logging.LogRecord) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    return f"{stamp}.{int(record.msecs):03d}Z"


class JsonFormatter(logging.Formatter):
    """One JSON object per record (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": _time(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        out.update(_fields(record))
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """``TIME LEVEL LOGGER MSG key=value ...`` (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        parts = [_time(record), record.levelname, record.name, record.getMessage()]
        for key, value in _fields(record).items():
            text = str(value)
            if not text or any(c.isspace() or c in '"=' for c in text):
                text = json.dumps(text, ensure_ascii=False)
            parts.append(f"{key}={text}")
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure(fmt: str, stream: TextIO | None = None) -> logging.Handler | None:
    """Send the package's log (INFO and up) to ``stream`` (stderr) as ``fmt``; the handler
    installed (None for ``none``). Replaces a handler an earlier call installed."""
    logger = logging.getLogger(LOGGER)
    for old in [h for h in logger.handlers if getattr(h, "_agentsessions", False)]:
        logger.removeHandler(old)
    if fmt == "none":
        return None
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler._agentsessions = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return handler

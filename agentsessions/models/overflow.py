"""Which HTTP error answers mean "the request is over the model's context window".

OpenAI-compatible servers say it in several ways; each of these is a context overflow:

- HTTP 400 (or 413, 422) whose JSON ``error.code`` or ``error.type`` is one of
  :data:`CODES`: OpenAI and Azure (``context_length_exceeded``), llama.cpp
  (``exceed_context_size_error``), and the ``string_above_max_length`` some proxies use;
- HTTP 400 (or 413, 422) whose message matches :data:`MESSAGE` (servers that leave the code
  empty, such as vLLM: "This model's maximum context length is 4096 tokens. However, you
  requested 5000 tokens ...", or Ollama-style "prompt too long" / "exceeds the context");
- HTTP 413 (Payload Too Large) from a gateway in front of the model: the request is too big
  for it, which compacting the request helps with just the same.

Nothing else is: a 400 for a bad parameter stays a plain endpoint failure. The check reads
only the error body the provider already read (at most 64 KiB).
"""

from __future__ import annotations

import json
import re
from typing import Any

CODES = frozenset(
    {
        "context_length_exceeded",
        "exceed_context_size_error",
        "context_window_exceeded",
        "string_above_max_length",
        "model_context_window_exceeded",
    }
)
MESSAGE = re.compile(
    r"maximum context length|context[ _-]?(length|window|size)[^.]{0,40}(exceed|too)"
    r"|exceeds? (the )?(available |model'?s? )?context|prompt is too long|prompt too long"
    r"|too many tokens|input is too long for the model",
    re.IGNORECASE,
)
_STATUSES = frozenset({400, 413, 422})


def is_overflow(status: int, body: bytes) -> bool:
    """Whether an HTTP error answer (``status`` and the raw body) is a context overflow."""
    if status not in _STATUSES:
        return False
    if status == 413:
        return True
    error = _error_object(body)
    for key in ("code", "type"):
        value = error.get(key)
        if isinstance(value, str) and value.lower() in CODES:
            return True
    message = error.get("message")
    text = message if isinstance(message, str) else body.decode("utf-8", errors="replace")
    return bool(MESSAGE.search(text[:4096]))


def _error_object(body: bytes) -> dict[str, Any]:
    """The ``error`` object of a JSON error body (or the body itself), else {}."""
    try:
        decoded = json.loads(body.decode("utf-8", errors="replace"))
    except ValueError:
        return {}
    if not isinstance(decoded, dict):
        return {}
    error = decoded.get("error", decoded)
    if isinstance(error, str):
        return {"message": error}
    return error if isinstance(error, dict) else {}

"""docs/SECURITY.md's trust boundary names every field a caller sends (issue 18).

The fields are walked from the generated descriptors: every request message of every
method of the services a daemon serves behind its tokens, and every message inside them
(map values too; Google's well-known types are leaves). Each must appear in the document
as ``Message.field`` (or ``Message.*`` for all of a message's fields), so a field added to
a request without a line saying what it may name fails here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from needs import need

need("grpc", "grpc")

from hostile import REGISTRY, SESSIONS

DOC = Path(__file__).resolve().parents[2] / "docs" / "SECURITY.md"
NAMED = re.compile(r"`([A-Z][A-Za-z]+)\.([a-z_]+|\*)`")


def _walk(message: Any, seen: dict[str, Any]) -> None:
    if message.full_name in seen or message.full_name.startswith("google.protobuf."):
        return
    seen[message.full_name] = message
    for field in message.fields:
        inner = field.message_type
        if inner is not None and inner.GetOptions().map_entry:
            inner = inner.fields_by_name["value"].message_type
        if inner is not None:
            _walk(inner, seen)


def caller_fields() -> set[str]:
    """``Message.field`` of everything a caller of the served services can send."""
    seen: dict[str, Any] = {}
    for method in (*SESSIONS.values(), *REGISTRY.values()):
        _walk(method.request.DESCRIPTOR, seen)
    return {f"{m.name}.{f.name}" for m in seen.values() for f in m.fields}


def test_every_field_a_caller_sends_is_in_the_trust_boundary() -> None:
    named = {f"{m}.{f}" for m, f in NAMED.findall(DOC.read_text(encoding="utf-8"))}
    wild = {name.split(".")[0] for name in named if name.endswith(".*")}
    fields = caller_fields()
    missing = sorted(f for f in fields if f not in named and f.split(".")[0] not in wild)
    assert not missing, f"fields docs/SECURITY.md does not place (add a row): {missing}"
    assert "ExecRequest.model" in fields and "RemotePlacement.address" in fields
    messages = {f.split(".")[0] for f in fields}
    stale = sorted(n for n in named - fields if n.split(".")[0] in messages and "*" not in n)
    assert not stale, f"docs/SECURITY.md names fields no request has (renamed?): {stale}"

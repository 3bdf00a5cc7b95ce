"""Why events are proto3-JSON dicts (TypedDicts) and not msgspec Structs: the measurement.

    python bench/representation.py

Both variants produce the identical canonical bytes that get hashed. The Struct variant
pays a hand-written mapping to proto3-JSON (int64 as strings, defaults omitted) on every
append; the dict variant *is* the proto3-JSON form, so the append path goes straight to
the canonicaliser. Prints events/s for each and the ratio.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentsessions.journal.format import canonical
from agentsessions.v1 import construct


class TextPart(msgspec.Struct, omit_defaults=True):
    text: str = ""


class Part(msgspec.Struct, omit_defaults=True):
    text: TextPart | None = None


class Message(msgspec.Struct, omit_defaults=True):
    role: str = ""
    parts: list[Part] = []


class Usage(msgspec.Struct, omit_defaults=True):
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0


class Event(msgspec.Struct, omit_defaults=True):
    execution_id: str = ""
    kind: str = ""
    message: Message | None = None
    usage: Usage | None = None


def struct_to_wire(ev: Event) -> dict[str, Any]:
    """The hand-written mapping a Struct representation needs (int64 -> str, omit defaults)."""
    out: dict[str, Any] = {}
    if ev.execution_id:
        out["execution_id"] = ev.execution_id
    if ev.kind:
        out["kind"] = ev.kind
    if ev.message is not None:
        out["message"] = msgspec.to_builtins(ev.message)
    if ev.usage is not None:
        u: dict[str, Any] = {}
        if ev.usage.model:
            u["model"] = ev.usage.model
        if ev.usage.input_tokens:
            u["input_tokens"] = str(ev.usage.input_tokens)
        if ev.usage.output_tokens:
            u["output_tokens"] = str(ev.usage.output_tokens)
        out["usage"] = u
    return out


def main() -> None:
    n = 100_000
    text = "lorem ipsum dolor sit amet " * 40
    structs = [
        Event(f"{i:016x}", "EVENT_OUTPUT", Message("assistant", [Part(TextPart(text))]))
        for i in range(n)
    ]
    dicts = [
        construct.output_event(construct.text_message("assistant", text), execution_id=f"{i:016x}")
        for i in range(n)
    ]
    assert canonical.canonical_json(struct_to_wire(structs[0])) == canonical.canonical_json(
        dicts[0]
    )
    t0 = time.perf_counter()
    for s in structs:
        canonical.canonical_json(struct_to_wire(s))
    t_struct = time.perf_counter() - t0
    t0 = time.perf_counter()
    for d in dicts:
        canonical.canonical_json(d)
    t_dict = time.perf_counter() - t0
    print(f"msgspec Struct + mapping: {n / t_struct:,.0f} events/s")
    print(f"proto3-JSON dict:         {n / t_dict:,.0f} events/s")
    print(f"dict / Struct: {t_struct / t_dict:.2f}x faster (and importable without msgspec)")


if __name__ == "__main__":
    main()

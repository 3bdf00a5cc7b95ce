"""The schema's fast checkers are generated code (agentsessions/v1/schemagen.py): the module
on disk must be what the table generates, or a change to the table would validate events by
a stale copy of it."""

from __future__ import annotations

from agentsessions.v1 import schema, schemagen
from agentsessions.v1.gen import schemafast


def test_the_generated_module_is_current() -> None:
    on_disk = schemagen.TARGET.read_text(encoding="utf-8")
    assert on_disk == schemagen.fast_source(), "run: python -m agentsessions.v1.schemagen"


def test_every_message_has_a_checker() -> None:
    made = schemafast.checkers(**schema.FAST_HELPERS)
    assert set(made) == set(schema.MESSAGES)

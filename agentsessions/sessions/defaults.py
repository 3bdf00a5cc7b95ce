"""The engine's defaults, defined once: what a request that names no runtime or model gets.

The engine resolves them (:mod:`.local`, :mod:`.wiring`); the CLI shows them as its flags'
defaults and imports them from here, which costs nothing (no controller, no store). The
project a session gets when its creator names none is the vocabulary's
(:data:`agentsessions.v1.turn.DEFAULT_PROJECT`: the journal's metadata defaults to it too).
"""

from __future__ import annotations

DEFAULT_RUNTIME = "auto"
"""The runtime an engine hosts harnesses on when none is chosen (warm where it can be)."""
DEFAULT_MODEL = "echo"
"""The model of a new session that names none."""

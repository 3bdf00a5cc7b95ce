"""The bounds the ``Sessions`` API puts on a request, whichever front end carries it.

Defined here, below every layer, so the store and the controller that enforce them and the
wire that checks and clamps requests against them name one constant each.
"""

from __future__ import annotations

DEFAULT_PAGE_SIZE = 50
"""The sessions one ``list`` page holds when the caller asks for none (page size 0)."""
MAX_PAGE_SIZE = 500
"""The largest page: a larger request is clamped to it, as the reference clamps."""
MAX_FORK_CHILDREN = 128
"""The most children one ``fork`` makes (all or nothing)."""

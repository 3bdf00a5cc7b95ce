"""typer's click, reached from this one module.

typer 0.28 (the release the CLI pins: later ones pull in pydantic and start slower) vendors
click as its private ``typer._click`` and re-exports only part of it; the help view, the
global-option parser and the root command need a few more of its names. They are imported
here and nowhere else in the CLI, so that a typer upgrade touches one module.
"""

from __future__ import annotations

from typer import _click as click
from typer._click.core import Command, Context, ParameterSource
from typer._click.types import _NumberRangeBase as NumberRangeBase

__all__ = ["Command", "Context", "NumberRangeBase", "ParameterSource", "click"]

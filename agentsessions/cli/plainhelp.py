"""The root ``--help`` page as plain text, laid out as rich lays it out, without rich.

When the page goes to a pipe or a file (no colour, no terminal), what rich prints is plain
text whose shape depends on the width alone; importing rich's core and laying the page
out with it costs about twice the CPU of ``python -c pass``. This module computes the same
lines with rich's own rules for what this page holds: word wrapping (``rich._wrap``: a word
keeps its trailing spaces, a word wider than its column is cut with an ellipsis, or folded
where rich folds), rounded panels with a left title, and the table widths rich gives the
options panel (every column its widest cell, the help column the rest) and the commands
panel (the names' column, then the rest).

Invariants: :func:`page` returns the bytes rich prints, or None when the page holds
something this module does not lay out (a required mark, several help items, text that is
not ASCII) or the width is too narrow for the simple case of rich's column collapse; the
caller then draws with rich. tests/unit/test_plainhelp.py compares the two at every width
from 20 to 200 columns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise

PlainRow = tuple[str, str, str, str, str, str]
"""One row of a plain options panel: long names, short names, negative long names,
negative short names, metavar, help (its text as rich shows it)."""
PlainPanel = tuple[str, Sequence[PlainRow]]
CommandPanel = tuple[str, Sequence[tuple[str, str]]]
Plain = tuple[str, Sequence[str], Sequence[PlainPanel], Sequence[CommandPanel], str]
"""A page's values for :func:`page`: usage, prose, options panels, commands panels, epilog."""

OVERFLOWS = ("ellipsis", "ellipsis", "ellipsis", "ellipsis", "fold", "ellipsis")
"""How each column of an options row overflows: a table column's default, but the metavar,
which typer's Text folds."""
_WORD = re.compile(r"\s*\S+\s*")  # rich._wrap.re_word
_TRAILING_SPACE = re.compile(r"\s+$")  # rich.text._re_whitespace


def _divide(text: str, width: int, fold: bool) -> list[int]:
    """Where rich breaks ``text`` to fit ``width`` cells (``rich._wrap.divide_line``;
    ASCII text, so a character is a cell)."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group(0)
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:
            if fold:
                pieces = [word[i : i + width] for i in range(0, len(word), width)]
                for index, piece in enumerate(pieces):
                    if start:
                        breaks.append(start)
                    if index == len(pieces) - 1:
                        offset = len(piece)
                    else:
                        start += len(piece)
            else:
                if start:
                    breaks.append(start)
                offset = len(word)
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    return breaks


def wrap(text: str, width: int, overflow: str = "fold") -> list[str]:
    """``text`` wrapped to ``width`` as ``rich.text.Text.wrap`` does (justify "default")."""
    lines: list[str] = []
    for line in text.split("\n"):
        cuts = [0, *_divide(line, width, overflow == "fold"), len(line)]
        for piece in (line[a:b] for a, b in pairwise(cuts)):
            if len(piece) > width:  # rstrip_end: the spaces beyond the width go
                space = _TRAILING_SPACE.search(piece)
                if space is not None:
                    piece = piece[: len(piece) - min(len(space.group(0)), len(piece) - width)]
            if len(piece) > width:
                piece = piece[: width - 1] + "…" if overflow == "ellipsis" else piece[:width]
            lines.append(piece)
    return lines


def _padded(lines: list[str], width: int, left: int = 1, right: int = 1) -> list[str]:
    """Each line padded to ``width`` between margins (``rich.padding.Padding``)."""
    return [" " * left + line.ljust(width) + " " * right for line in lines]


def _panel(title: str, body: list[str], width: int) -> list[str]:
    """A rounded panel of ``width`` columns around ``body`` (lines of ``width - 4``)."""
    label = f" {title} "
    top = "╭─" + label + "─" * (width - 4 - len(label)) + "─╮"
    return [top, *("│ " + line + " │" for line in body), "╰" + "─" * (width - 2) + "╯"]


def _rows(cells: list[list[str]], widths: list[int], pads: list[tuple[int, int]]) -> list[str]:
    """One table row: each cell's lines in its column, the shorter cells padded below."""
    height = max(len(cell) for cell in cells)
    out = []
    for index in range(height):
        parts = []
        for cell, width, (left, right) in zip(cells, widths, pads, strict=True):
            text = cell[index] if index < len(cell) else ""
            parts.append(" " * left + text.ljust(width - left - right) + " " * right)
        out.append("".join(parts))
    return out


def _options(rows: Sequence[PlainRow], inner: int) -> list[str] | None:
    """The body of an options panel ``inner`` columns wide, or None outside the simple case
    of rich's collapse (the help column must stay the widest)."""
    count = len(rows[0])
    pads = [(0 if i == 0 else 1, 0 if i == count - 1 else 1) for i in range(count)]
    widths = [max(max(len(row[i]) for row in rows) + sum(pads[i]), 1) for i in range(count - 1)]
    rest = inner - sum(widths)
    if rest < max(widths) or rest - 1 < 1:
        return None
    widths.append(rest)
    body: list[str] = []
    for row in rows:
        cells = [
            wrap(text, w - sum(p), flow)
            for text, w, p, flow in zip(row, widths, pads, OVERFLOWS, strict=True)
        ]
        body += _rows(cells, widths, pads)
    return body


def _commands(entries: Sequence[tuple[str, str]], inner: int, name_width: int) -> list[str]:
    """The body of a commands panel: names in a column ``name_width`` wide, help beside."""
    widths = [name_width + 1, inner - name_width - 1]
    pads = [(0, 1), (1, 0)]
    body: list[str] = []
    for name, text in entries:
        cells = [wrap(name, name_width, "ellipsis")[:1], wrap(text, widths[1] - 1, "ellipsis")]
        body += _rows(cells, widths, pads)
    return body


def page(
    width: int,
    usage: str,
    prose: Sequence[str],
    options: Sequence[PlainPanel],
    commands: Sequence[CommandPanel],
    epilog: str,
) -> str | None:
    """The help page ``width`` columns wide as rich prints it without colour, or None when
    rich must draw it (too narrow for the simple layout, or the values hold what this
    module does not lay out)."""
    names = [name for _, entries in commands for name, _ in entries]
    name_width = max((len(name) for name in names), default=0)
    inner = width - 4
    if inner - name_width - 2 < 2:
        return None
    blank = " " * width
    out = [blank, *_padded(wrap(usage, width - 2), width - 2), blank]
    if prose:
        text = [line for item in prose for line in wrap(item, width - 2)]
        out += [*_padded(text, width - 2), blank]
    for title, rows in options:
        if rows:
            body = _options(rows, inner)
            if body is None:
                return None
            out += _panel(title, body, width)
    for title, entries in commands:
        if entries:
            out += _panel(title, _commands(entries, inner, name_width), width)
    if epilog:
        out += [blank, *_padded(wrap(epilog, width - 2), width - 2), blank]
    return "\n".join(out) + "\n"

"""What every report section uses: number formatting, the Markdown tables (``md_table``), the footnotes of cells
that did not run, and the published stack names."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from bench.core.stacks import STACKS

#: A stack's name in the published tables -> our stack id (``Stack.reference``).
REFERENCE_STACKS = {s.reference: s.id for s in STACKS.values() if s.reference}


def _num(v) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def json_list(value: Any) -> list | None:
    """A list cell of the collected rows (``history.loss``, ``repeats.*.values``; ``bench.results.rows.read_rows``
    reads it as a list), or None when the cell holds no list."""
    return value if isinstance(value, list) else None


def fmt(v, digits: int = 1, unit: str = "") -> str:
    """``v`` with ``digits`` decimals and ``unit``, or ``n/a`` when it is not a number."""
    f = _num(v)
    return "n/a" if f is None else f"{f:.{digits}f}{unit}"


def fmt_beside(v, digits: int, claim: Callable[[float], bool], kind: str = "f") -> str:
    """``v`` with ``digits`` decimals (``kind="g"``: significant digits), more where fewer would print a number that
    ``claim``, the test the number is judged by beside it (``|ratio - 1| >= 2 %``), answers otherwise than ``v``
    does: a ratio of 1.0199 beside "no detectable change" prints 1.0199, never 1.020. The verdict is ``v``'s own,
    the printed number only shows it; ``n/a`` when ``v`` is not a number."""
    f = _num(v)
    if f is None:
        return "n/a"
    shown = digits
    while shown < 17 and claim(float(f"{f:.{shown}{kind}}")) != claim(f):  # 17 digits print any float exactly
        shown += 1
    return f"{f:.{shown}{kind}}"


#: A column's alignment in ``md_table``: ``left`` (the default) or ``right`` (``---:``, for counts).
Align = Literal["left", "right"]
_LINE_BREAK = re.compile(r"\s*[\r\n]+\s*")


def md_cell(value: Any) -> str:
    """``value`` as one Markdown table cell: its text as an f-string writes it, each line break (with the spaces
    around it) one space, since a pipe table's cell is one line, and every ``|`` escaped as ``\\|`` (GitHub
    Flavored Markdown's escape of a pipe inside a cell; ``bench.results.site.markdown.cells_of`` reads it back)."""
    return _LINE_BREAK.sub(" ", f"{value}").replace("|", "\\|")


def md_table(headers: Sequence[Any], rows: Iterable[Sequence[Any]], align: Sequence[Align] | None = None) -> list[str]:
    """A Markdown pipe table as lines (header, separator, one line per row), written by ``tabulate`` (its ``pipe``
    format): every report table is written here. Cells go through ``md_cell``; their text is kept as given (no
    number parsing: ``0.500`` stays ``0.500``); columns are padded to a common width.

    ``align``: per column, ``left`` (``:---``) or ``right`` (``---:``); None: every column left.

    Raises:
        ValueError: a row, or ``align``, has another number of cells than ``headers``.
    """
    from tabulate import tabulate

    head = [md_cell(h) for h in headers]
    body = [[md_cell(c) for c in row] for row in rows]
    aligns = list(align) if align is not None else ["left"] * len(head)
    for cells in (aligns, *body):
        if len(cells) != len(head):
            raise ValueError(f"a table row of {len(cells)} cells under {len(head)} headers: {cells}")
    text = tabulate(body, headers=head, tablefmt="pipe", colalign=aligns, disable_numparse=True)
    return text.splitlines()


class Footnotes:
    """Collects reasons of cells that are not ok; ``ref`` returns the marker to put in a table.

    ``prefix`` keeps the labels of several runs in one document apart (``[^paper-full-gpu-1]``); ``start``: the
    labels used before these (a run's GPU sections share one numbering, as ``run_sections`` writes them)."""

    def __init__(self, prefix: str = "", start: int = 0):
        self.prefix = prefix
        self.start = start
        self.items: list[str] = []

    def ref(self, row) -> str:
        self.items.append(f"{row['stack']} {row['workload']} {row['variant']}: {row['status']}: {row.get('reason')}")
        return f"{row['status']} [^{self.prefix}{self.start + len(self.items)}]"

    def lines(self) -> list[str]:
        return [f"[^{self.prefix}{i}]: {text}" for i, text in enumerate(self.items, self.start + 1)]

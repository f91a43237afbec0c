"""What every report section uses: number formatting, the footnotes of cells that did not run, and
the published stack names."""

from __future__ import annotations

import math
from typing import Any

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

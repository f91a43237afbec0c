"""The report's Markdown tables as cells, for the tests that check a row: the padding is the table writer's
(``bench.results.report.common.md_table``, tabulate), never part of what a test asserts."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bench.results.site.markdown import cells_of

_SEPARATOR = re.compile(r"^\|(\s*:?-+:?\s*\|)+$")


def table_rows(text: str) -> list[list[str]]:
    """Every pipe-table line of ``text`` (a report's Markdown; headers and rows, separators left out) as its cells,
    stripped of their padding, in order."""
    lines = (ln.strip() for ln in text.splitlines())
    return [cells_of(ln) for ln in lines if ln.startswith("|") and not _SEPARATOR.match(ln.replace(" ", ""))]


def rows_starting(text: str, *first: str) -> list[list[str]]:
    """The table lines of ``text`` whose first cells are ``first``."""
    return [r for r in table_rows(text) if r[:len(first)] == list(first)]


def has_cells(text: str, cells: Sequence[str]) -> bool:
    """Whether a table line of ``text`` holds ``cells`` side by side, in that order."""
    n = len(cells)
    return any(r[i:i + n] == list(cells) for r in table_rows(text) for i in range(len(r) - n + 1))

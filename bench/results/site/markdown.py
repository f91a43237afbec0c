"""The report's Markdown, as the results site shows it: each section's lines (``bench.results.report.section_lines``)
split into headings, paragraphs, lists and tables, so that the site's tables are the report's own cells.

Only what the report's sections write is read: ``#`` headings, ``- `` items, pipe tables (``| a | b |`` rows, one
``|---|`` separator), ``![title](file)`` images (left out: the site draws its own charts), footnote lines and
paragraphs; inline ``**bold**``, ``*emphasis*``, `` `code` `` and ``[text](link)`` (kept as text).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

_SEPARATOR = re.compile(r"^\|(\s*:?-+:?\s*\|)+$")
_CELL_BORDER = re.compile(r"(?<!\\)\|")
_INLINE = (
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),
    (re.compile(r"\*\*(.+?)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
    (re.compile(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])"), r"<em>\1</em>"),
)


@dataclass
class Block:
    """One piece of a section: ``kind`` is ``h`` (``level``, ``text``), ``p`` (``text``), ``ul`` (``items``) or
    ``table`` (``head``, ``rows``: the cells' Markdown text)."""

    kind: str
    text: str = ""
    level: int = 0
    items: list[str] = field(default_factory=list)
    head: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)


def cells_of(line: str) -> list[str]:
    """A pipe-table line's cells (``bench.results.report.common.md_table`` writes them), stripped of their padding:
    split at each ``|`` that is not escaped, and each escaped ``\\|`` read back as ``|``."""
    inner = line.strip().removeprefix("|")
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip().replace("\\|", "|") for c in _CELL_BORDER.split(inner)]


def blocks(lines: list[str]) -> list[Block]:
    """``lines`` (one section's Markdown) as blocks, in order."""
    out: list[Block] = []
    for line in lines:
        text = line.rstrip()
        last = out[-1] if out else None
        if not text.strip() or text.startswith("!["):
            out.append(Block("gap")) if last is not None and last.kind != "gap" else None
        elif text.startswith("#"):
            level = len(text) - len(text.lstrip("#"))
            out.append(Block("h", text[level:].strip(), level=level))
        elif text.startswith("|"):
            if last is not None and last.kind == "table":
                if not _SEPARATOR.match(text.replace(" ", "")):
                    last.rows.append(cells_of(text))
            else:
                out.append(Block("table", head=cells_of(text)))
        elif text.startswith("- "):
            if last is not None and last.kind == "ul":
                last.items.append(text[2:])
            else:
                out.append(Block("ul", items=[text[2:]]))
        elif last is not None and last.kind == "p":
            last.text += " " + text.strip()
        else:
            out.append(Block("p", text.strip()))
    return [b for b in out if b.kind != "gap"]


def tables(lines: list[str]) -> list[Block]:
    """The table blocks of ``lines``."""
    return [b for b in blocks(lines) if b.kind == "table"]


def inline(text: str) -> str:
    """HTML of one line of the report's Markdown (escaped; bold, emphasis, code; a link as its text)."""
    out = html.escape(text, quote=False)
    for pattern, repl in _INLINE:
        out = pattern.sub(repl, out)
    return out


def plain(text: str) -> str:
    """The text a browser shows for ``inline(text)``: the Markdown marks removed, spaces collapsed."""
    out = text
    for pattern, _ in _INLINE:
        out = pattern.sub(r"\1", out)
    return " ".join(out.split())

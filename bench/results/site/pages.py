"""The results site's HTML: the page shell (its one stylesheet and two scripts, all in the site's ``assets/``),
tables that sort, filter and open a record, and the report's section blocks (``bench.results.site.markdown``)."""

from __future__ import annotations

import html
import json
from typing import Any

from bench.results.site.markdown import Block, blocks, inline

#: The site's name in every page's title and header.
SITE_NAME = "dlbench results"


def esc(text: Any) -> str:
    """``text`` escaped for HTML text and attribute values."""
    return html.escape(str(text), quote=True)


def page(title: str, body: str, root: str, records: dict[int, Any] | None = None) -> str:
    """A whole page: ``body`` under the site's navigation, the record panel, and ``records`` (record index -> its
    blocks, ``cells.record_of``) as JSON for the panel. ``root``: the relative path to the site's top ('' or
    ``../``)."""
    data = json.dumps({str(k): v for k, v in (records or {}).items()}, allow_nan=False, default=str)
    data = data.replace("</", "<\\/")  # a value holding "</script>" must not end the element
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)} · {SITE_NAME}</title>
<link rel="stylesheet" href="{root}assets/site.css">
<script src="{root}assets/plotly.min.js"></script>
</head>
<body>
<header><a class="home" href="{root}index.html">{SITE_NAME}</a>
<nav><a href="{root}index.html">Runs</a> <a href="{root}history.html">History</a></nav></header>
<main>
{body}
</main>
<aside id="record" hidden aria-live="polite"><button type="button" class="close" aria-label="close">×</button>
<h2 class="record-title"></h2><div class="record-body"></div></aside>
<script type="application/json" id="records">{data}</script>
<script src="{root}assets/site.js"></script>
</body>
</html>
"""


def table(table_id: str, head: list[str], rows: list[list[str]], *, markdown: bool = False,
          row_refs: list[Any] | None = None, cell_refs: list[list[Any]] | None = None,
          row_links: list[str] | None = None, caption: str = "") -> str:
    """A sortable (click a heading), filterable (the box above it) table. ``markdown``: the cells are the report's
    Markdown (``inline``), else plain text. ``row_refs``: per row, the record a click on it opens (None: none);
    ``cell_refs``: the same per cell; ``row_links``: per row, a page a click on it opens."""
    fmt = inline if markdown else esc
    title = f"<caption>{fmt(caption)}</caption>" if caption else ""
    lines = [f'<div class="table-wrap"><input type="search" class="filter" data-table="{esc(table_id)}" '
             f'placeholder="filter rows" aria-label="filter the rows of this table">',
             f'<table class="sortable" id="{esc(table_id)}">{title}',
             "<thead><tr>" + "".join(f"<th>{fmt(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for i, row in enumerate(rows):
        attrs = ""
        if row_refs is not None and row_refs[i] is not None:
            attrs = f' class="ref" data-record="{esc(row_refs[i])}"'
        elif row_links is not None:
            attrs = f' class="link" data-href="{esc(row_links[i])}"'
        cells = []
        for j, text in enumerate(row):
            ref = cell_refs[i][j] if cell_refs is not None and j < len(cell_refs[i]) else None
            cell_attr = f' class="ref" data-record="{esc(ref)}"' if ref is not None else ""
            cells.append(f"<td{cell_attr}>{fmt(text)}</td>")
        lines.append(f"<tr{attrs}>" + "".join(cells) + "</tr>")
    return "\n".join([*lines, "</tbody></table></div>"])


def section_html(lines: list[str], prefix: str, cell_refs: list[list[list[Any]] | None] | None = None,
                 shift: int = 0, kinds: tuple[str, ...] = ("h", "p", "ul", "table")) -> str:
    """One report section (its Markdown ``lines``) as HTML: headings moved down by ``shift`` levels, each table
    sortable and filterable with the id ``<prefix>-<n>``; ``cell_refs``: per table, its cells' records (or None);
    ``kinds``: the blocks shown (``markdown.Block.kind``)."""
    out = []
    n = 0
    for b in (b for b in blocks(lines) if b.kind in kinds):
        out.append(_block_html(b, prefix, n, (cell_refs or [])[n] if b.kind == "table" and cell_refs
                               and n < len(cell_refs) else None, shift))
        n += b.kind == "table"
    return "\n".join(out)


def _block_html(b: Block, prefix: str, n: int, refs: list[list[Any]] | None, shift: int) -> str:
    if b.kind == "h":
        level = min(6, b.level + shift)
        return f"<h{level}>{inline(b.text)}</h{level}>"
    if b.kind == "ul":
        return "<ul>" + "".join(f"<li>{inline(item)}</li>" for item in b.items) + "</ul>"
    if b.kind == "table":
        return table(f"{prefix}-{n}", b.head, b.rows, markdown=True, cell_refs=refs)
    return f"<p>{inline(b.text)}</p>"


def chart_block(charts: list[str]) -> str:
    """Chart fragments (``charts.chart_html``), two to a row where the page is wide enough. Each box has its width
    before its chart draws itself (as the page is parsed, before the boxes beside it exist): plotly sizes a chart
    once, from its box."""
    if not charts:
        return ""
    return f'<div class="charts cols-{min(2, len(charts))}">' + "".join(
        f'<figure class="chart">{c}</figure>' for c in charts) + "</div>"

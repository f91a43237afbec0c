"""One run's page of the results site: per GPU (or the CPU) and suite, its charts, a table of every cell (a click
opens the cell's record) and the report's own section for the suite (``section_lines``: the same tables, the same
cells, the same values as ``report.md``), then the Versions and Keras-overhead comparisons, the cells that did not
run, and the provenance and method."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.results.compare import median_ci
from bench.results.report import section_frames, section_lines
from bench.results.report.classic import classic_grid
from bench.results.report.common import Footnotes
from bench.results.report.gpus import gpu_groups
from bench.results.site import charts
from bench.results.site.cells import COLUMNS, cell_rows, record_of
from bench.results.site.pages import chart_block, esc, page, section_html, table
from bench.results.site.sources import SiteRun

#: The suites in the order a page shows them; a suite not named here comes after them.
SUITE_ORDER = ("classic", "tuning", "paper")


@dataclass
class Group:
    """One GPU's (or the CPU's) rows of a run, with what the report computes from them.

    Attributes:
        label: the GPU's label (``gpu_groups``), '' when the run ran on one.
        rows: the rows (a slice of the run's frame: its index is the records' key).
        frames: ``section_frames(rows)``; lines: ``section_lines`` of them (no plots); notes: their footnotes.
    """

    label: str
    rows: Any
    frames: dict[str, Any]
    lines: dict[str, list[str]]
    notes: Footnotes = field(default_factory=Footnotes)


def groups_of(run: SiteRun) -> list[Group]:
    """The run's rows per GPU, each with its sections computed once (the run page and the history page use them)."""
    out: list[Group] = []
    for label, rows in gpu_groups(run.df):
        # one numbering across the run's GPU sections, as report.md's (``run_sections``)
        notes = Footnotes(start=sum(len(g.notes.items) for g in out))
        frames = section_frames(rows)
        out.append(Group(label, rows, frames, section_lines(rows, frames, notes, {}), notes))
    return out


class Charts:
    """The charts of one page, each with a page-unique id; ``count``: how many were drawn."""

    def __init__(self, prefix: str):
        self.prefix, self.count = prefix, 0

    def html(self, figures: list[Any]) -> str:
        """The figures that exist (None: no data), as one row of charts."""
        out = []
        for fig in figures:
            if fig is not None:
                self.count += 1
                out.append(charts.chart_html(fig, f"{self.prefix}chart-{self.count}"))
        return chart_block(out)


def _suites(rows) -> list[str]:
    present = list(dict.fromkeys(rows["suite"]))
    return [s for s in SUITE_ORDER if s in present] + [s for s in present if s not in SUITE_ORDER]


def _suite_figures(suite: str, rows, cells: list[dict[str, Any]]) -> list[Any]:
    figures = [charts.ms_chart(cells, f"{suite}: ms/step per cell and stack (median of repeats, 95 % CI)")]
    if suite == "classic":
        figures.append(charts.s_per_epoch_chart(rows, cells, "classic: s/epoch, the 2017 metric"))
    if suite == "paper":
        figures.append(charts.paper_chart(rows))
    figures.append(charts.metric_chart(rows, cells, "j_per_epoch", f"{suite}: energy per epoch", "J/epoch"))
    figures.append(charts.metric_chart(rows, cells, "mfu", f"{suite}: MFU", "MFU (%)", scale=100.0))
    return figures


def suite_html(group: Group, suite: str, cells: list[dict[str, Any]], drawn: Charts, key: str) -> str:
    """One suite of a group: heading, charts, the cells table and the report's section for the suite."""
    mine = [c for c in cells if c["suite"] == suite]
    rows = group.rows[group.rows["suite"] == suite]
    ok = sum(c["status"] == "ok" for c in mine)
    out = [f'<h2 id="{esc(key)}">Suite {esc(suite)}</h2>',
           f"<p>{len(mine)} cells, {ok} ok. Click a row (or a chart's point) to see that cell's record: its "
           "provenance, the settings in effect, the spread across repeats, and why a cell did not run.</p>",
           drawn.html(_suite_figures(suite, rows, mine)),
           table(f"{key}-cells", [h for h, _ in COLUMNS], [c["cells"] for c in mine],
                 row_refs=[c["index"] for c in mine])]
    refs: list[list[list[Any]] | None] | None = None
    if suite == "classic":
        grid = classic_grid(group.rows, Footnotes())
        refs = [[[None, None, *(ref for _, ref in row)] for _, _, row in grid[1]]] if grid else None
    out.append(section_html(group.lines.get(suite, []), f"{key}-report", refs, shift=1))
    return "\n".join(out)


def group_html(group: Group, drawn: Charts, key: str) -> str:
    """A group's suites, comparisons, footnotes, provenance and method."""
    cells = cell_rows(group.rows, median_ci)
    out = [suite_html(group, s, cells, drawn, f"{key}{s}") for s in _suites(group.rows)]
    for name, title in (("versions", "Versions: ms/step ratio candidate/base"),
                        ("overhead", "Keras overhead: ms/step ratio Keras/native")):
        if group.lines[name]:
            out += [section_html(group.lines[name], f"{key}{name}"),
                    drawn.html([charts.pair_chart(group.frames[name], title)])]
    if group.lines.get("profile"):  # "Where the time goes": its tables and sentences (bench run --profile)
        out.append(section_html(group.lines["profile"], f"{key}profile"))
    if group.notes.items:
        out += ["<h2>Cells that did not run</h2>",
                f'<ol start="{group.notes.start + 1}">' + "".join(f"<li>{esc(n)}</li>" for n in group.notes.items)
                + "</ol>"]
    out += ['<details class="method"><summary>Provenance and method (as in report.md)</summary>',
            section_html(group.lines["provenance"] + group.lines["method"], f"{key}method"), "</details>"]
    return "\n".join(out)


def run_page(run: SiteRun, groups: list[Group]) -> tuple[str, int]:
    """The run's page and how many charts it draws."""
    df = run.df
    drawn = Charts("")
    ok = int((df["status"] == "ok").sum())
    body = [f"<h1>Run {esc(run.id)}</h1>",
            f'<p class="summary">{len(df)} cells, {ok} ok, {len(df) - ok} not ok; suites '
            f"{esc(', '.join(_suites(df)))}; stacks {esc(', '.join(dict.fromkeys(df['stack'])))}. "
            f"From <code>{esc(run.id)}.csv</code>; the Markdown report of the same rows says the same numbers.</p>"]
    for i, group in enumerate(groups):
        if group.label:
            body.append(f"<h2>GPU: {esc(group.label)}</h2>")
        body.append(group_html(group, drawn, f"g{i}-"))
    records = {int(index): record_of(row) for index, row in df.iterrows()}
    return page(f"Run {run.id}", "\n".join(body), "../", records), drawn.count

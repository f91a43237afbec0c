"""The report's "History" section: the runs in the results history (``bench.results.history``) and, per cell
that ran in two or more of them on the same machine model, a trend plot of ms/step over the runs.

A trend joins only rows of one cell (``cell``: the cell id without its stack) on one machine model (``machine``:
the GPU model, or the CPU model): a line across machines would show the machines. One line per stack; its points
are the runs in date order, each labelled with the framework versions the row ran (``versions``); the bars are
the min and max across repeats (none for a row of one repeat: the intervals' spread within one process is not
a spread across runs of the cell).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.results.history import point_rows
from bench.results.report.common import md_table
from bench.results.report.gpus import slug

#: The plots' folder under the report's ``plots/``.
HISTORY_DIR = "history"


def trend_groups(cells) -> list[tuple[str, str, Any]]:
    """``[(cell, machine, rows)]`` for every (cell, machine) whose ok rows with ms/step span two or more runs,
    sorted; ``rows`` ordered by start time (``point_rows``, as the BMF export reads them). Rows whose record names
    no machine model are in no trend: "unknown GPU" of two runs may be two models. A point is one run of one stack on
    the machine model: a run's several rows of the cell on the model (several GPUs of it) are one row, their median,
    its bars over all their repeats, and ``rows`` says how many (``history.one_per_run``)."""
    ok = point_rows(cells)
    out = []
    for (cell, machine), rows in ok.groupby(["cell", "machine"], sort=True):
        if rows["run"].nunique() >= 2:
            out.append((str(cell), str(machine), rows.sort_values(["started_utc", "run"])))
    return out


def _run_order(rows) -> list[str]:
    """The group's runs in date order (a run's first start)."""
    first = rows.groupby("run")["started_utc"].min().sort_values(kind="stable")
    return list(first.index)


def trend_plot(cell: str, machine: str, rows, path: Path) -> int:
    """Write one trend PNG to ``path``: ms/step per run (x, in date order), one line per stack, bars from the
    repeats' min to max; x labels are the versions with the date when one stack is drawn, else the date and run
    with each point labelled with its versions; a point standing for several rows (``trend_groups``) is labelled
    ``median of N rows``. Returns the number of points drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = _run_order(rows)
    x_of = {run: i for i, run in enumerate(order)}
    stacks = sorted(rows["stack"].unique())
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(order) + 2), 4.5))
    points = 0
    for sid in stacks:
        g = rows[rows["stack"] == sid].sort_values("started_utc")
        xs, ys = [x_of[r] for r in g["run"]], list(g["ms_per_step_mean"])
        lo = [y - m if n and n >= 2 and m == m else 0.0
              for y, m, n in zip(ys, g["ms_per_step_repeats_min"], g["repeats_n"].fillna(0), strict=True)]
        hi = [m - y if n and n >= 2 and m == m else 0.0
              for y, m, n in zip(ys, g["ms_per_step_repeats_max"], g["repeats_n"].fillna(0), strict=True)]
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=sid)
        points += len(xs)
        merged = g["rows"] if "rows" in g.columns else [1] * len(g)
        for x, y, v, n in zip(xs, ys, g["versions"].fillna(""), merged, strict=True):
            note = ", ".join(([v] if len(stacks) > 1 else []) + ([f"median of {n} rows"] if n > 1 else []))
            if note:
                ax.annotate(note, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=6)
    dates = rows.groupby("run")["date"].first()
    if len(stacks) == 1:
        versions = rows.groupby("run")["versions"].first().fillna("")
        labels = [f"{versions[r]}\n{dates[r]} ({r})" for r in order]
    else:
        labels = [f"{dates[r]}\n{r}" for r in order]
    ax.set_xticks(range(len(order)), labels, fontsize=7, rotation=15, ha="right")  # long run names must not overlap
    ax.set_ylabel("ms/step (bars: min-max across repeats)")
    ax.set_title(f"{cell}\n{machine}", fontsize=9)
    ax.set_ylim(bottom=0)
    ax.margins(x=0.3)  # room for the version labels beside the last run's points
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return points


def trend_plots(cells, out_dir: Path) -> dict[str, str]:
    """A trend PNG per ``trend_groups`` entry in ``out_dir``; returns {title: file name}."""
    files: dict[str, str] = {}
    groups = trend_groups(cells)
    if groups:
        out_dir.mkdir(parents=True, exist_ok=True)
    for cell, machine, rows in groups:
        name = f"trend_{slug(cell)}__{slug(machine)}.png"
        trend_plot(cell, machine, rows, out_dir / name)
        files[f"{cell} on {machine}"] = name
    return files


def history_section(cells, runs, link_prefix: str, files: dict[str, str]) -> list[str]:
    """Markdown lines: the history's runs (``bench.results.history.runs``) and links to the trend plots
    (``trend_plots``; ``link_prefix`` + file name)."""
    lines = ["## History", "",
             f"The results history (`results/history.sqlite`, `bench history`) holds {len(runs)} run(s) "
             f"and {len(cells)} rows. Per cell that ran in two or more runs on the same GPU (or CPU) model, a "
             "trend plot shows ms/step per run in date order, one line per stack, labelled with the framework "
             "versions each row ran; bars: min-max across repeats. A row whose record names no GPU or CPU model is "
             "in no trend. A run's several rows of one cell and stack on one model (several GPUs of it) are one "
             "point, their median (bars over all their repeats), labelled \"median of N rows\".", ""]
    lines += md_table(["run", "started (UTC)", "cells", "ok"],
                      ([r["run"], r["started_utc"] or "n/a", r["cells"], r["ok"]] for r in runs.to_dict("records")),
                      align=["left", "left", "right", "right"])
    lines.append("")
    if not files:
        lines += ["No cell ran in two or more runs on the same machine model yet: no trend plot.", ""]
        return lines
    lines += [f"- [{title}]({link_prefix}{name})" for title, name in files.items()]
    return lines + [""]

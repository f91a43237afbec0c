"""``bench site``: the results site written into one folder, with an index of runs, a page per run and the history.

The folder opens from the file system (``index.html``) with no server and no network: every script is in its
``assets/`` (plotly.min.js, written from the plotly package; site.js and site.css, from this package), the records
are embedded in their pages as JSON (a page opened with ``file://`` may not fetch another file).
"""

from __future__ import annotations

import importlib.resources
import os
from pathlib import Path
from typing import Any

from bench.results.history import machine_label
from bench.results.report.history import trend_groups
from bench.results.site.pages import esc, page, section_html, table
from bench.results.site.runpage import Charts, Group, groups_of, run_page
from bench.results.site.sources import SiteRun, find_histories, find_runs, load_histories

#: The index's runs table: headings (``index_row`` fills them).
INDEX_HEAD = ["run", "date (UTC)", "device", "machine", "suites", "stacks", "cells", "ok", "not ok"]
ASSETS = ("site.js", "site.css")


def _write(path: Path, text: str) -> None:
    """``text`` into ``path`` through a temporary file renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_assets(out_dir: Path) -> None:
    """plotly.min.js (the plotly package's own bundle, MIT) and the site's script and stylesheet into ``assets/``."""
    from plotly.offline import get_plotlyjs

    assets = out_dir / "assets"
    _write(assets / "plotly.min.js", get_plotlyjs())
    for name in ASSETS:
        _write(assets / name, importlib.resources.files("bench.results.site").joinpath(name).read_text("utf-8"))


def _first_date(df) -> str:
    import pandas as pd

    start = pd.to_datetime(df["started_utc"], utc=True, errors="coerce") if "started_utc" in df else None
    return "n/a" if start is None or start.isna().all() else f"{start.min():%Y-%m-%d %H:%M}"


def index_row(run: SiteRun) -> list[str]:
    """A run's row of the index (``INDEX_HEAD``)."""
    df = run.df
    ok = int((df["status"] == "ok").sum())
    machines = sorted({machine_label(r) for r in df.to_dict("records")})
    return [run.id, _first_date(df), ", ".join(sorted(set(map(str, df["device"])))), "; ".join(machines),
            ", ".join(dict.fromkeys(map(str, df["suite"]))), str(df["stack"].nunique()), str(len(df)), str(ok),
            str(len(df) - ok)]


def index_page(runs: list[SiteRun]) -> str:
    """The index: every run, newest first; a click on a row opens the run's page."""
    runs = sorted(runs, key=lambda r: (_first_date(r.df), r.id), reverse=True)
    body = ["<h1>Runs</h1>",
            f"<p>{len(runs)} collected runs. Each run's page has, per suite, ms/step per cell and stack with each "
            "median's 95 % interval, the tables of the Markdown report (the same cells, the same values), and every "
            "cell's record. <a href=\"history.html\">History</a>: the runs of the results history, each cell's "
            "ms/step across runs, the version comparisons.</p>",
            *(["<p><strong>CPU rows are smoke tests of the harness, not GPU benchmarks.</strong></p>"]
              if any((r.df["device"] == "cpu").any() for r in runs) else []),
            table("runs", INDEX_HEAD, [index_row(r) for r in runs], row_links=[r.page for r in runs])]
    return page("Runs", "\n".join(body), "")


def _comparisons(views: list[tuple[SiteRun, list[Group]]]) -> list[str]:
    """Every run's Versions and Keras-overhead sections: the report's headings and tables, verdicts included (how
    they are computed is said on the run's page)."""
    out: list[str] = []
    for run, groups in views:
        for i, g in enumerate(groups):
            for name in ("versions", "overhead"):
                if g.lines[name]:
                    out += [f'<h3>Run <a href="{esc(run.page)}">{esc(run.id)}</a>'
                            f"{esc(f' ({g.label})') if g.label else ''}</h3>",
                            section_html(g.lines[name], f"cmp-{len(out)}-{i}-{name}", shift=1,
                                         kinds=("h", "ul", "table"))]
    return out


def history_page(histories: list[Path], views: list[tuple[SiteRun, list[Group]]]) -> tuple[str, int]:
    """The history page: the histories' runs, per cell and machine model with two or more runs its ms/step across
    them (``trend_groups``, as the report's trend plots), and the runs' version comparisons; and its chart count."""
    from bench.results.site import charts

    cells, runs = load_histories(histories)
    drawn = Charts("h-")
    body = ["<h1>History</h1>"]
    if not histories:
        body.append("<p>No results history found (<code>history.sqlite</code>, written by <code>bench collect</code>)."
                    "</p>")
    else:
        files = ", ".join(f"<code>{esc(h)}</code>" for h in histories)
        body += [f"<p>{len(runs)} runs and {len(cells)} rows in {files}. Per cell that ran in two or more runs on "
                 "the same GPU (or CPU) model, its ms/step per run in date order, one line per stack; bars: min-max "
                 "across repeats; a row whose record names no GPU or CPU model is in no trend; a run's several rows of "
                 "one cell and stack on one model (several GPUs of it) are one point, their median.</p>",
                 table("history-runs", ["run", "started (UTC)", "cells", "ok", "history"],
                       [[str(r["run"]), str(r["started_utc"] or "n/a"), str(r["cells"]), str(r["ok"]),
                         str(r["history"])] for r in runs.to_dict("records")])]
        groups = trend_groups(cells)
        body.append(drawn.html([charts.trend_chart(c, m, rows) for c, m, rows in groups]) if groups else
                    "<p>No cell ran in two or more runs on the same machine model yet.</p>")
    compared = _comparisons(views)
    body += ["<h2>Version comparisons and Keras overhead</h2>",
             *(compared or ["<p>No run holds a version pair or a Keras-overhead pair.</p>"])]
    return page("History", "\n".join(body), ""), drawn.count


def build_site(sources: list[Path], out_dir: Path, histories: list[Path] | None = None) -> dict[str, Any]:
    """Write the site for the runs under ``sources`` (``find_runs``) and the ``histories`` (default: those found
    beside the runs) into ``out_dir``; returns {runs, pages, charts, warnings}.

    Raises:
        ValueError: no run, a CSV or history this code cannot read.
    """
    runs, warnings = find_runs(sources)
    ids = [r.id for r in runs]
    if len(set(ids)) != len(ids):
        raise ValueError(f"two runs of one name in one folder: {sorted(i for i in ids if ids.count(i) > 1)}")
    histories = find_histories(sources) if histories is None else histories
    write_assets(out_dir)
    views = [(run, groups_of(run)) for run in runs]
    n_charts = 0
    for run, groups in views:
        html, n = run_page(run, groups)
        _write(out_dir / run.page, html)
        n_charts += n
    html, n = history_page(histories, views)
    _write(out_dir / "history.html", html)
    _write(out_dir / "index.html", index_page(runs))
    return {"runs": len(runs), "pages": len(runs) + 2, "charts": n_charts + n, "warnings": warnings}

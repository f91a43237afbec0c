"""``bench report RUN.csv|DIR ...``: a Markdown report with PNG plots from collected CSVs.

One CSV gives one run's report; several (or a directory: every bench CSV in it, as ``make report``
passes ``results/``) give one ``report.md`` with a section per run, so the committed
``results/report.md`` covers every suite that was collected. Per run: its provenance (GPU, driver,
versions, date), the Method (timing cadence, rounds and drift, settings in effect, data, the
correctness gate), the Keras 3 benchmark's Table 2 (suite ``paper``: ours beside the published A100
value, Figure 1's speedup plot), the classic suite's table (ms/step beside the 2017 metric, s/epoch), and the
tuning study (per stack: out-of-the-box vs best configuration, the full grid beside the reference's published
time where a row ran the study's settings, plots, and
which of the study's findings hold on our data), then "Versions" (each version stack against its base) and "Keras
overhead" (Keras 3 against the native code of its backend): per cell a ratio of ms/step with its interval and verdict
(``bench.results.report.versions``). Cells that are not ok are shown with their status and
their reason in a footnote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.results.report.classic import classic_section
from bench.results.report.common import Footnotes
from bench.results.report.gpus import cost_line, gpu_comparison, gpu_groups, slug
from bench.results.report.history import HISTORY_DIR, history_section, trend_plots
from bench.results.report.method import method_section
from bench.results.report.paper import paper_section
from bench.results.report.plots import comparison_plots, paper_plots, tuning_plots
from bench.results.report.profile import profile_frame, profile_plots, profile_section
from bench.results.report.provenance import provenance
from bench.results.report.tuning import tuning_frame, tuning_section
from bench.results.report.versions import overhead_section, overhead_tables, version_tables, versions_section


def read_bench_csv(csv_path: Path):
    """A collected CSV as a DataFrame, its list cells as lists (``bench.results.rows.read_rows``: from the JSON
    lines beside it, or the CSV's text for a run collected before them).

    Raises:
        FileNotFoundError: the CSV does not exist. ValueError: it is not a bench CSV (a required column
        is missing, or it cannot be parsed).
    """
    import pandas as pd

    from bench.results.rows import read_rows

    try:
        df = read_rows(csv_path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise ValueError(f"{csv_path} is not a bench CSV ({e})") from e
    for col in ("stack", "suite", "workload", "variant", "status"):
        if col not in df.columns:
            raise ValueError(f"{csv_path} is not a bench CSV (no {col!r} column)")
    if "baseline" not in df.columns:
        df["baseline"] = False
    # read_csv leaves one block per column of a wide CSV; later column assignments would then warn
    # (pandas' PerformanceWarning, "highly fragmented") on every report: one consolidated frame instead
    return df.copy()


def run_sections(df, plot_dir: Path, link_prefix: str, notes: Footnotes,
                 price_per_hour: float | None = None) -> list[str]:
    """One run's sections (headings from ``##``), its PNGs written to ``plot_dir`` and linked as
    ``link_prefix + file name``; cells that are not ok land in ``notes``. Rows from several GPUs get a
    "GPUs" comparison and one section per GPU (``bench.results.report.gpus``), never one table together.
    ``price_per_hour``: $ per GPU-hour, for the cost line (None: GPU-hours only)."""
    groups = gpu_groups(df)
    if len(groups) == 1:
        return _sections(df, plot_dir, link_prefix, notes, price_per_hour)
    lines = ["## GPUs", "", f"This run holds cells from {len(groups)} GPUs (or the CPU): each has its own section "
             "below, since cells measured on different GPUs are never compared in one table.", ""]
    cost = cost_line(df, price_per_hour)
    lines += ([cost, ""] if cost else []) + gpu_comparison(df)
    for label, rows in groups:
        body = _sections(rows, plot_dir / slug(label), f"{link_prefix}{slug(label)}/", notes, price_per_hour)
        lines += [f"## GPU: {label}", "", *("#" + ln if ln.startswith("#") else ln for ln in body)]
    return lines


def section_frames(df) -> dict[str, Any]:
    """What the sections of one run's rows (one GPU's) are computed from, once: ``tuning`` (``tuning_frame``),
    ``versions`` and ``overhead`` (lists of ``PairTable``), ``paper`` (whether the rows hold paper cells), ``profile``
    (``profile_frame``: the cells' profiles). The
    report's plots and the results site's charts read the same objects as the tables."""
    return {"tuning": tuning_frame(df), "versions": version_tables(df), "overhead": overhead_tables(df),
            "paper": bool((df["suite"] == "paper").any()), "profile": profile_frame(df)}


def section_lines(df, frames: dict[str, Any], notes: Footnotes, plots: dict[str, dict[str, str]],
                  price_per_hour: float | None = None) -> dict[str, list[str]]:
    """One run's (one GPU's) sections as Markdown lines, by name in the report's order: provenance (with the
    cost line), method, paper, classic, tuning, versions, overhead, profile ("Where the time goes"); a section
    without rows has no lines.
    ``frames``: ``section_frames(df)``; ``plots``: per section (paper, tuning, compared, profile), {title: link} of its
    PNGs ({} for none: the results site draws its own charts). Cells that are not ok land in ``notes``."""
    cost = cost_line(df, price_per_hour)
    versions, overhead = frames["versions"], frames["overhead"]
    return {"provenance": [*provenance(df), *([cost, ""] if cost else [])], "method": method_section(df),
            "paper": paper_section(df, notes, plots.get("paper", {})), "classic": classic_section(df, notes),
            "tuning": tuning_section(frames["tuning"], notes, plots.get("tuning", {})),
            "versions": versions_section(versions, plots.get("compared", {})),
            "overhead": overhead_section(overhead, plots.get("compared", {}), bool(versions)),
            "profile": profile_section(frames["profile"], plots.get("profile", {}))}


def _sections(df, plot_dir: Path, link_prefix: str, notes: Footnotes, price_per_hour: float | None) -> list[str]:
    """The sections of ``df`` (one GPU's rows), then the footnotes of its own cells that did not run: ``notes`` is
    shared by a run's GPU sections for one numbering, so the notes before this section's are another GPU's."""
    earlier = len(notes.items)
    frames = section_frames(df)
    tuning, versions, overhead, profiled = frames["tuning"], frames["versions"], frames["overhead"], frames["profile"]
    if frames["paper"] or not tuning.empty or versions or overhead or not profiled.empty:
        plot_dir.mkdir(parents=True, exist_ok=True)
    files = {"tuning": tuning_plots(tuning, plot_dir) if not tuning.empty else {},
             "profile": profile_plots(profiled, plot_dir),
             "paper": paper_plots(df, plot_dir) if frames["paper"] else {},
             "compared": comparison_plots(versions, overhead, plot_dir) if versions or overhead else {}}
    plots = {kind: {title: link_prefix + name for title, name in found.items()} for kind, found in files.items()}
    lines = [ln for section in section_lines(df, frames, notes, plots, price_per_hour).values() for ln in section]
    if notes.items[earlier:]:
        lines += ["## Cells that did not run", "", *notes.lines()[earlier:], ""]
    return lines


def load_runs(paths: list[Path]) -> tuple[list[tuple[str, Any]], list[str]]:
    """The collected runs named by ``paths``, each CSV read once; a directory stands for every ``*.csv``
    directly in it (sorted by name).

    Returns ``([(run, DataFrame)], warnings)`` with ``run`` the CSV's file name without ``.csv``: a CSV
    found in a directory that is not a bench CSV (for example a ``bench compare --out`` table) is left
    out with a warning; one named explicitly raises.

    Raises:
        ValueError: an explicitly named file is not a bench CSV, or no CSV is found at all (naming the folders one
            level down that hold CSVs: ``bench report results`` where ``results/<run>/`` was meant).
    """
    runs: dict[Path, tuple[str, Any]] = {}
    warnings: list[str] = []
    for p in paths:
        if not p.is_dir():
            runs.setdefault(p.resolve(), (p.stem, read_bench_csv(p)))
            continue
        for f in sorted(p.glob("*.csv")):
            if f.resolve() in runs:
                continue
            try:
                runs[f.resolve()] = (f.stem, read_bench_csv(f))
            except ValueError as e:
                warnings.append(f"skipped {e}")
    if not runs:
        below = sorted({str(f.parent) for p in paths if p.is_dir() for f in p.glob("*/*.csv")})
        hint = (f"; its folders hold CSVs, name one or more: `bench report {below[0]}` ({', '.join(below)})"
                if below else " (run `make collect` first)")
        raise ValueError(f"no bench CSV in {', '.join(map(str, paths))}{hint}")
    return list(runs.values()), warnings


def history_lines(history: Path | None, out_dir: Path) -> list[str]:
    """The "History" section from the results history at ``history`` (``bench.results.history``), its trend
    PNGs in ``out_dir/plots/history/``; no lines when ``history`` is None or absent.

    Raises:
        ValueError: the file is not a history this code reads (``HistoryError``'s message).
    """
    from bench.results import history as store

    if history is None or not Path(history).is_file():
        return []
    try:
        cells, runs = store.load(history), store.runs(history)
    except store.HistoryError as e:
        raise ValueError(str(e)) from e
    files = trend_plots(cells, out_dir / "plots" / HISTORY_DIR)
    return history_section(cells, runs, f"plots/{HISTORY_DIR}/", files)


def write_report(runs: list[tuple[str, Any]], out_dir: Path, price_per_hour: float | None = None,
                 history: Path | None = None) -> Path:
    """Write ``out_dir/report.md`` from collected runs (``load_runs``); returns the report's path.

    Each run's PNGs go to ``out_dir/plots/<run>/``. With several runs the report has one
    ``## Run <run>`` section per run, in the order given. ``price_per_hour``: $ per GPU-hour for the cost
    lines (None: GPU-hours only; a price is never guessed). ``history``: the results history, for a closing
    "History" section with trend plots in ``out_dir/plots/history/`` (None or absent: none).

    Raises:
        ValueError: ``history`` is not a history this code reads.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    if len(runs) == 1:
        run, df = runs[0]
        lines = [f"# Benchmark report: {run}", "",
                 *run_sections(df, out_dir / "plots" / run, f"plots/{run}/", Footnotes(), price_per_hour)]
    else:
        lines = ["# Benchmark report", "", "Runs (one section each, from `results/<run>.csv`):", ""]
        lines += [f"- [{run}](#run-{run.replace('.', '')}): {len(df)} cells, "
                  f"{int((df['status'] == 'ok').sum())} ok" for run, df in runs]
        lines.append("")
        for run, df in runs:
            body = run_sections(df, out_dir / "plots" / run, f"plots/{run}/", Footnotes(f"{run}-"), price_per_hour)
            lines += [f"## Run {run}", "", *("#" + ln if ln.startswith("#") else ln for ln in body)]
    lines += history_lines(history, out_dir)
    path = out_dir / "report.md"
    tmp = path.with_name(".report.md.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(path)
    return path

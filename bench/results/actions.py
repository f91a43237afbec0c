"""The bodies of ``bench``'s results commands: collect, compare, report, site and the history's runs, show and
export-bmf.

Each logs what it reports to this module's logger (``bench.results.actions``: INFO, and WARNING for a file skipped or
a warning of the report; the CLI prints them on stdout and stderr, ``bench.cli.console``) and raises
``bench.core.errors.InputError`` for what the user can fix (a missing file or package, a bad flag), which the CLI
prints as one line with exit code 2. pandas, scipy, matplotlib, plotly and tabulate are imported here, when a command
needs them, never when ``bench`` starts.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.core.errors import InputError

logger = logging.getLogger(__name__)

NEEDS = "install dlbench[collect] or use the collector image"



def collect_run(results_dir: Path, out_csv: Path, history_path: Path | None, no_history: bool) -> None:
    """``bench collect``: every cell JSON under ``results_dir`` into ``out_csv`` (the run is its stem), appended to
    the history (``history_path``, default history.sqlite beside the CSV) unless ``no_history``; logs ms/step by
    workload x stack.

    Raises:
        InputError: no pandas, no records or an unreadable one, a history that refuses the run.
    """
    try:
        from bench.results.collect import collect, pivot_ms_per_step
        from bench.results.history import HISTORY_NAME, HistoryError, append_run
    except ImportError as e:
        raise InputError(f"collect needs pandas ({e}); {NEEDS}") from e
    try:
        df, bad = collect(results_dir, out_csv)
    except (FileNotFoundError, ValueError) as e:
        raise InputError(str(e)) from e
    for path, reason in bad:
        logger.warning(f"skipped {path}: {reason}")
    logger.info(f"wrote {out_csv}: {len(df)} rows, {len(bad)} file(s) skipped")
    if not no_history:
        import sqlite3

        history_path = history_path or out_csv.parent / HISTORY_NAME
        try:
            n = append_run(history_path, out_csv.stem, df, source=str(results_dir))
        except HistoryError as e:
            raise InputError(f"{e} (the CSV {out_csv} is written)") from e
        except sqlite3.Error as e:  # e.g. a bucket's FUSE mount (goofys on S3) refuses SQLite's random writes
            raise InputError(
                f"cannot write the history {history_path}: {type(e).__name__}: {e}; the CSV {out_csv} is written. "
                "A bucket mounted with FUSE takes no SQLite writes: --history on a local disk, or --no-history") from e
        logger.info(f"history {history_path}: run {out_csv.stem}, {n} rows (replacing any earlier collect of it)")
    logger.info("ms/step (mean over steady-state steps):")
    logger.info(pivot_ms_per_step(df).to_string())


def compare_runs(csv_a: Path, csv_b: Path, metric: str, alpha: float, threshold: float, out_csv: Path | None,
                 variants: tuple[str, str] | None, profile: bool = False) -> None:
    """``bench compare``: per cell, the ratio B/A of ``metrics.<metric>`` with a Mann-Whitney U test at ``alpha``
    across repeats, flagged beyond ``threshold`` (relative); ``variants``: A's cells of the first variant against
    B's of the second. Prints the table and a summary line; writes it to ``out_csv`` when given. ``profile``: then,
    for every cell both runs profiled, the two profiles side by side (``bench.results.report.profile``).

    Raises:
        InputError: no pandas/scipy, an unreadable CSV, or a metric or variant the CSVs lack.
    """
    try:
        import pandas as pd

        from bench.results.compare import NoCommonCell, compare, not_compared, rule_tests, rule_text
        from bench.results.differs import NOT_RECORDED
        from bench.results.report.common import fmt_beside
        from bench.results.rows import read_rows
    except ImportError as e:
        raise InputError(f"compare needs pandas and scipy ({e}); {NEEDS}") from e
    try:
        df_a, df_b = read_rows(csv_a), read_rows(csv_b)
        try:
            table = compare(df_a, df_b, metric, alpha, threshold, variants)
        except NoCommonCell:  # every cell failed in B, say: the statuses and reasons are the answer
            _log_left(pd, not_compared(df_a, df_b, variants))
            raise
        left = not_compared(df_a, df_b, variants)
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        raise InputError(str(e).splitlines()[0]) from e
    with pd.option_context("display.width", 200, "display.max_colwidth", 60, "display.max_rows", None):
        # each statistic the rule judges with the digits that keep it on its side of the rule (fmt_beside)
        shown = table.assign(**{c: [fmt_beside(v, 4, test, "g") for v in table[c]]
                                for c, test in rule_tests(alpha, threshold).items()})
        logger.info(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    flagged = table[table["verdict"].isin(["higher", "lower"])]
    logger.info(f"{len(table)} cells compared; {len(flagged)} changed beyond noise "
                f"({rule_text(alpha, threshold)}); "
                f"{int((table['verdict'] == 'underpowered').sum())} underpowered (too few repeats); "
                f"{int((table['verdict'] == 'n/a').sum())} n/a (no ratio: column reason)")
    differ = table[table["differs"] != ""]
    if len(differ):  # matched by name, run otherwise: the ratio holds that difference too
        logger.info(f"{len(differ)} of the cells compared ran on another machine or with other settings in effect in "
                    "B than in A (column differs): their ratio measures that difference too")
    # not recorded is no difference, and no sameness either
    machine = table[table["unknown"].str.startswith("machine:")]
    if len(machine):
        logger.info(f"{len(machine)} of the cells compared could not be checked for another machine: a record names "
                    "no GPU or CPU model (column unknown)")
    unrecorded = table[table["unknown"].str.contains(NOT_RECORDED, regex=False)]
    if len(unrecorded):
        logger.info(f"{len(unrecorded)} of the cells compared could not be checked for other settings: one CSV holds "
                    "a setting in effect that the other CSV has no column for, its records from before the field "
                    "(column unknown)")
    _log_left(pd, left)  # a cell that failed in B is no "change beyond noise" above: named here
    if out_csv:
        table.to_csv(out_csv, index=False)
    if profile:
        _log_profiles(df_a, df_b)


def _log_left(pd: Any, left: Any) -> None:
    """The cells ``bench compare`` did not compare, with both statuses and the reason (``not_compared``); nothing
    when there are none."""
    if not len(left):
        return
    logger.info(f"{len(left)} cells not compared (not ok in a CSV, or in one CSV only):")
    with pd.option_context("display.width", 200, "display.max_colwidth", 80, "display.max_rows", None):
        logger.info(left.to_string(index=False))


def _log_profiles(df_a: Any, df_b: Any) -> None:
    """``bench compare --profile``'s part: each cell's two profiles side by side, or why there is none."""
    import pandas as pd

    from bench.results.report.profile import compare_profiles

    pairs = compare_profiles(df_a, df_b)
    if not pairs:
        logger.info("profiles: no ok cell carries a profile in both CSVs (bench run --profile)")
    for cell, table in pairs:
        if isinstance(table, str):  # not comparable: say why
            logger.info(f"\nwhere the time goes, {cell}: {table}")
            continue
        logger.info(f"\nwhere the time goes, {cell} (A | B; % of the profiled window, ms per profiled step):")
        with pd.option_context("display.width", 200):
            logger.info(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))


def report_folder(sources: Sequence[Path]) -> Path:
    """Where ``bench report`` writes without ``-o``: the first source if it is a directory, else its directory."""
    first = sources[0]
    return first if first.is_dir() else first.parent


def write_report_for(sources: Sequence[Path], out_dir: Path | None, price_per_hour: float | None,
                     history_path: Path | None) -> None:
    """``bench report``: report.md with plots from the collected CSVs ``sources`` (a directory: every bench CSV in
    it), in ``out_dir`` (default: the first source's directory), with cost at ``price_per_hour`` ($ per GPU-hour)
    and the History section from ``history_path`` (default: history.sqlite there, when there).

    Raises:
        InputError: no pandas/matplotlib/tabulate, a given history that is not there, or CSVs the report cannot read.
    """
    try:  # tabulate is imported where a table is written: checked here, before anything is written
        import tabulate  # noqa: F401

        from bench.results.report import load_runs, write_report
    except ImportError as e:
        raise InputError(f"report needs pandas, matplotlib and tabulate ({e}); {NEEDS}") from e
    try:
        runs, warnings = load_runs(list(sources))
        for w in warnings:
            logger.warning(f"warning: {w}")
        if history_path is not None and not history_path.is_file():
            raise InputError(f"no history at {history_path}")
        folder = report_folder(sources)
        history_path = history_path or folder / "history.sqlite"
        path = write_report(runs, out_dir or folder, price_per_hour, history_path)
    except InputError:
        raise
    except ValueError as e:
        raise InputError(str(e)) from e
    logger.info(f"wrote {path}")


def write_site(sources: Sequence[Path], out_dir: Path, histories: Sequence[Path] | None) -> None:
    """``bench site``: the static results site (``bench.results.site``) of the runs under ``sources`` and the
    results ``histories`` (default: every history.sqlite beside the runs) in ``out_dir``.

    Raises:
        InputError: no pandas/plotly/tabulate, no run, a CSV or history that cannot be read.
    """
    import time

    try:  # plotly and tabulate are imported where a chart or table is drawn: checked here, before anything is written
        import plotly.graph_objects  # noqa: F401
        import plotly.offline  # noqa: F401
        import tabulate  # noqa: F401

        from bench.results.site.build import build_site
    except ImportError as e:
        raise InputError(f"site needs pandas, scipy, plotly and tabulate ({e}); {NEEDS}") from e
    for h in histories or ():
        if not h.is_file():
            raise InputError(f"no history at {h}")
    start = time.perf_counter()
    try:
        done = build_site(list(sources), out_dir, list(histories) if histories else None)
    except ValueError as e:
        raise InputError(str(e)) from e
    for w in done["warnings"]:
        logger.warning(f"warning: {w}")
    logger.info(f"wrote {out_dir / 'index.html'}: {done['runs']} runs, {done['pages']} pages, {done['charts']} charts "
                f"in {time.perf_counter() - start:.1f} s (open it in a browser: no server needed)")


def _history() -> ModuleType:
    """``bench.results.history``, or InputError naming what it needs."""
    try:
        from bench.results import history
    except ImportError as e:
        raise InputError(f"history needs pandas ({e}); {NEEDS}") from e
    return history


def history_runs(history_path: Path) -> None:
    """``bench history runs``: the runs in the history, oldest first.

    Raises:
        InputError: no pandas, or no readable history at ``history_path``.
    """
    h = _history()
    try:
        table = h.runs(history_path)
    except h.HistoryError as e:
        raise InputError(str(e)) from e
    logger.info(table.to_string(index=False) if len(table) else f"{history_path}: no runs")


def history_show(history_path: Path, run: str | None, stacks: Sequence[str], cells: Sequence[str],
                 out_csv: Path | None) -> None:
    """``bench history show``: the rows of ``run`` (default all) for ``stacks`` and ``cells`` (default all), as
    ms/step per run, stack and cell, or every column into ``out_csv``.

    Raises:
        InputError: no pandas, no readable history, or a stack or cell the history does not hold.
    """
    h = _history()
    try:
        df = h.load(history_path, run)
    except h.HistoryError as e:
        raise InputError(str(e)) from e
    for name, values in (("stack", stacks), ("cell", cells)):
        have = sorted(set(df[name].dropna()))  # an older layout's row has no cell (NULL): sorted() refused None
        unknown = sorted(set(values) - set(have))
        if unknown:
            raise InputError(f"no {name} {', '.join(unknown)} in the history (it has: {', '.join(have) or 'none'})")
        if values:
            df = df[df[name].isin(values)]
    if out_csv is not None:
        df.to_csv(out_csv, index=False)
        logger.info(f"wrote {out_csv}: {len(df)} rows")
        return
    cols = ["run", "date", "stack", "versions", "machine", "cell", "status", "ms_per_step_mean", "repeats_n"]
    logger.info(df[cols].to_string(index=False) if len(df) else "no rows")


def history_export_bmf(history_path: Path, run: str | None, out_json: Path) -> None:
    """``bench history export-bmf``: one run's (default: the latest) ok cells in Bencher Metric Format into
    ``out_json``: latency (ns per step), throughput (examples/s); says how many ok rows it left out (their record
    names no machine model: ``history.point_rows``) and how many benchmarks are the median of several rows.

    Raises:
        InputError: no pandas, no readable history, an empty one, or a run it does not hold.
    """
    import json

    h = _history()
    try:
        if run is None:
            listed = h.runs(history_path)
            if listed.empty:
                raise InputError(f"{history_path}: no runs")
            run = str(listed["run"].iloc[-1])
        cells = h.load(history_path, run)
        bmf: dict[str, Any] = h.to_bmf(cells)
    except h.HistoryError as e:
        raise InputError(str(e)) from e
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(bmf, indent=2) + "\n")
    logger.info(f"wrote {out_json}: run {run}, {len(bmf)} benchmarks")
    ok = h.measured_rows(cells)
    unknown, merged = int((~h.known_machine(ok)).sum()), h.point_rows(cells)["rows"]
    if unknown:  # as the trends: "unknown GPU" rows may be several models, no one testbed
        logger.info(f"{unknown} ok row(s) left out: no GPU or CPU model recorded for them, as in the trends")
    if (merged > 1).any():
        logger.info(f"{int((merged > 1).sum())} benchmark(s) the median of a cell's rows on several GPUs (or hosts) of "
                    "one model, bounds over all their repeats")

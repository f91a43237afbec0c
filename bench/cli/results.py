"""``bench collect``, ``compare``, ``report``, ``site`` and ``history``: parse, call the one function in
``bench.results.actions`` that does it, print its one-line error (exit code 2)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from bench.cli.common import fail, output_file, output_folder
from bench.core.errors import InputError
from bench.core.price import dollars
from bench.results import actions
from bench.results.compare import ALPHA, THRESHOLD


def _call(body: Callable[..., None], *args: Any) -> None:
    """``body(*args)``, an InputError becoming the one-line usage error."""
    try:
        body(*args)
    except InputError as e:
        fail(str(e))


def _price(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """``--price-per-hour`` read by ``bench.core.price.dollars``, the rule make's ``PRICE_PER_HOUR`` and ``bench.host
    cloud launch`` check it by (a finite number, 0 or more)."""
    try:
        return None if value is None else dollars(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


@click.command("collect")
@click.argument("results_dir", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out_csv", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="CSV file to write (its rows also as JSON lines beside it: same stem, .jsonl).")
@click.option("--history", "history_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Results history to append the run to (a re-collected run replaces its rows) [default: "
                   "history.sqlite beside the CSV].")
@click.option("--no-history", is_flag=True, help="Write the CSV (and its JSON lines) only.")
def collect_cmd(results_dir: Path, out_csv: Path, history_path: Path | None, no_history: bool) -> None:
    """Merge every cell JSON under RESULTS_DIR into one CSV and its JSON lines (the run is the CSV's name without
    .csv), append it to the results history and print ms/step by workload x stack."""
    with output_file(out_csv, "'-o' / '--output'"), output_file(None if no_history else history_path, "'--history'"):
        _call(actions.collect_run, results_dir, out_csv, history_path, no_history)


@click.command("compare")
@click.argument("csv_a", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("csv_b", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--metric", default="ms_per_step_mean", show_default=True, help="metrics.<name> to compare.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=ALPHA,
              show_default=True, help="Significance level of the Mann-Whitney U test.")
@click.option("--threshold", type=click.FloatRange(min=0), default=THRESHOLD, show_default=True,
              help="Smallest relative change worth flagging.")
@click.option("-o", "--output", "out_csv", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the comparison as CSV.")
@click.option("--variant-a", default=None, help="Compare A's cells of this variant (e.g. default) ...")
@click.option("--variant-b", default=None, help="... with B's of this one (e.g. row_lstm-reshape): a knob's "
              "effect; A and B may be the same CSV. Both or neither.")
@click.option("--profile", is_flag=True, help="Also show, for each cell both runs profiled (bench run --profile), "
              "the two profiles side by side: where the time goes.")
def compare_cmd(csv_a: Path, csv_b: Path, metric: str, alpha: float, threshold: float, out_csv: Path | None,
                variant_a: str | None, variant_b: str | None, profile: bool) -> None:
    """Per-cell ratio B/A of a metric, with a significance test across repeats (--profile: and the profiles)."""
    if (variant_a is None) != (variant_b is None):
        fail("--variant-a and --variant-b go together")
    variants = (variant_a, variant_b) if variant_a is not None and variant_b is not None else None
    with output_file(out_csv, "'-o' / '--output'"):
        _call(actions.compare_runs, csv_a, csv_b, metric, alpha, threshold, out_csv, variants, profile)


@click.group("history")
def history_group() -> None:
    """The results history (every collected run's rows): list runs, query rows, export them."""


def _history_opt(f: Callable[..., None]) -> Callable[..., None]:
    return click.option("--history", "history_path", type=click.Path(dir_okay=False, path_type=Path),
                        default=Path("results/history.sqlite"), envvar="BENCH_HISTORY", show_default=True,
                        help="The history file (env BENCH_HISTORY).")(f)


@history_group.command("runs")
@_history_opt
def history_runs_cmd(history_path: Path) -> None:
    """The runs in the history, oldest first."""
    _call(actions.history_runs, history_path)


@history_group.command("show")
@_history_opt
@click.option("--run", default=None, help="Only this run.")
@click.option("--stack", "stacks", multiple=True, help="Only these stacks (repeatable).")
@click.option("--cell", "cells", multiple=True, help="Only these cells: cell id without the stack (repeatable).")
@click.option("-o", "--output", "out_csv", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write every column of the selected rows to this CSV instead of printing a summary.")
def history_show_cmd(history_path: Path, run: str | None, stacks: tuple[str, ...], cells: tuple[str, ...],
                     out_csv: Path | None) -> None:
    """The history's rows (ms/step per run, stack and cell), or all their columns as CSV."""
    with output_file(out_csv, "'-o' / '--output'"):
        _call(actions.history_show, history_path, run, stacks, cells, out_csv)


@history_group.command("export-bmf")
@_history_opt
@click.option("--run", default=None, help="The run to export [default: the latest].")
@click.option("-o", "--output", "out_json", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="BMF JSON file to write (for `bencher run --adapter json --file`).")
def history_bmf_cmd(history_path: Path, run: str | None, out_json: Path) -> None:
    """One run's ok cells in Bencher Metric Format: latency (ns per step), throughput (examples/s)."""
    with output_file(out_json, "'-o' / '--output'"):
        _call(actions.history_export_bmf, history_path, run, out_json)


@click.command("report")
@click.argument("sources", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory for report.md and plots/<run>/*.png [default: the first source's directory].")
@click.option("--price-per-hour", callback=_price, default=None, envvar="BENCH_PRICE_PER_HOUR",
              help="$ per GPU-hour: the report adds each run's cost beside its GPU-hours [default: none, never "
                   "guessed].")
@click.option("--history", "history_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Results history for the History section and its trend plots [default: history.sqlite in the "
                   "first source's directory, when there].")
def report_cmd(sources: tuple[Path, ...], out_dir: Path | None, price_per_hour: float | None,
               history_path: Path | None) -> None:
    """Markdown report with plots from collected CSVs (a directory: every bench CSV in it, one section each)."""
    # a report refused (no bench CSV among the sources) leaves none of the folders made for -o (output_folder)
    with output_folder(out_dir or actions.report_folder(sources), "'-o' / '--out'" if out_dir else
                       "the report's folder (the first source's; -o sets another)") as folder:
        _call(actions.write_report_for, sources, folder, price_per_hour, history_path)


@click.command("site")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder to write the site into (index.html, runs/, history.html, assets/).")
@click.option("--history", "histories", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Results history for the History page (repeatable) [default: every history.sqlite in the "
                   "sources and their folders].")
def site_cmd(sources: tuple[Path, ...], out_dir: Path, histories: tuple[Path, ...]) -> None:
    """Static results site (opens from the file system, offline) from collected CSVs: a directory stands for
    its CSVs and those of its folders one level down."""
    with output_folder(out_dir, "'-o' / '--out'"):
        _call(actions.write_site, sources, out_dir, histories or None)


COMMANDS = (collect_cmd, compare_cmd, history_group, report_cmd, site_cmd)

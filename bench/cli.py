"""The ``bench`` command line: list, run, collect.

Bad input gets one line on stderr and exit code 2; a run exits 1 when any cell did not succeed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from bench.core.request import Request, cli_flag
from bench.core.stacks import DEFAULT_STACKS, STACKS, get_stack
from bench.results.compare import ALPHA, THRESHOLD
from bench.results.record import FIELDS
from bench.run import plan as planning
from bench.run.scenarios import scenario_of
from bench.run.workloads import SIZES, SUITES, WORKLOADS

if TYPE_CHECKING:
    from bench.run.gpu_state import Cooldown

USAGE_EXIT = 2
BANNER_WIDTH = 78


def fail(message: str) -> NoReturn:
    """Raise a usage error that ``main`` prints as one line (exit code 2)."""
    raise click.UsageError(message)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Benchmark matrix: Keras 2 on TensorFlow, Keras 3 on TensorFlow, JAX and PyTorch, plain PyTorch and plain JAX."""


@cli.command("list")
@click.option("--stacks", "only_stacks", is_flag=True, help="Print stack ids only.")
def list_cmd(only_stacks: bool) -> None:
    """Stacks, suites, workloads, tasks and sizes."""
    if only_stacks:
        click.echo("\n".join(STACKS))
        return
    click.echo("stacks:")
    for s in STACKS.values():
        click.echo(f"  {s.id:<13} service {s.service:<14} {s.title}")
    click.echo("suites:")
    for suite, names in SUITES.items():
        click.echo(f"  {suite}: {', '.join(names)}")
    click.echo("workloads:")
    for w in WORKLOADS.values():
        click.echo(f"  {w.name:<24} {scenario_of(w).describe(w)}")
    click.echo(f"fit variants (Keras stacks): {fit_variants()}")
    click.echo(f"tasks: {', '.join(planning.all_tasks())}")
    click.echo(f"sizes: {', '.join(SIZES)}")


def fit_variants() -> str:
    """The fit suites' named one-flag Keras variants (``bench.core.knobs.FIT_VARIANTS``) as ``--set`` flags."""
    from bench.core.knobs import FIT_VARIANTS

    return " | ".join(f"--set {k}: {v}" for k, v in FIT_VARIANTS.items())


def resolve_device(requested: str, stacks: list[str]) -> str:
    """``auto`` -> gpu when every selected stack's framework sees a GPU, else cpu.

    ``gpu`` with no visible GPU is a usage error naming the stack that sees none.
    """
    if requested == "cpu":
        return "cpu"
    for sid in stacks:
        try:
            gpus = planning_probe(sid)
        except RuntimeError as e:
            fail(str(e))
        if not gpus:
            if requested == "gpu":
                fail(f"--device gpu (DEVICE=gpu) but the {get_stack(sid).backend} framework of stack "
                     f"{sid} sees no GPU; check the NVIDIA driver, the NVIDIA Container Toolkit and "
                     f"that the container was started with a GPU")
            return "cpu"
    return "gpu"


def planning_probe(stack_id: str) -> list[str]:
    from bench.run.probe import probe_gpus

    return probe_gpus(get_stack(stack_id))


def banner(lines: list[str]) -> None:
    rule = "!" * BANNER_WIDTH
    click.echo("\n".join([rule, *(f"!! {line}" for line in lines), rule]), err=True)


def _click_type(f):
    """The click type of a ``Request`` field (``bench.core.request.option``'s kind, choices and minimum)."""
    m = f.metadata
    if m["choices"]:
        return click.Choice(m["choices"])
    if m["kind"] == "int":
        return click.IntRange(min=m["minimum"], min_open=m["open_min"]) if m["minimum"] is not None else int
    if m["kind"] == "float":
        return click.FloatRange(min=m["minimum"], min_open=m["open_min"]) if m["minimum"] is not None else float
    if m["kind"] == "path":
        return click.Path(file_okay=False, path_type=Path)
    return None


def request_options(command: str):
    """Decorator: one click option per ``bench.core.request.Request`` field that ``command`` takes, its name, type,
    default, environment variable and help declared there (the one place they are)."""

    def decorate(f):
        for field_ in reversed(Request.options(command)):
            m = field_.metadata
            kw = {"help": m["help"], "envvar": m["env"], "metavar": m["metavar"]}
            if m["kind"] == "flag":
                kw.update(is_flag=True, default=field_.default)
            elif m["multiple"]:
                kw.update(multiple=True, required=m["required"], type=_click_type(field_))
            else:
                kw.update(type=_click_type(field_), default=field_.default,
                          show_default=field_.default is not None and "[default:" not in m["help"])
            f = click.option(cli_flag(field_), field_.name, **kw)(f)
        return f

    return decorate


def round_schedules(stack_ids: list[str], round_: int | None, round_stacks: str | None, seed: int | None,
                    repeats: int, rule: str = "shuffled") -> dict[str, dict]:
    """Each stack's ``schedule`` block for ``--round`` (empty without it), its order by ``rule`` (``--order``);
    exits with a clear error on bad input."""
    from bench.host import rounds

    if round_ is None:
        if round_stacks is not None or seed is not None or rule != rounds.ORDER_RULES[0]:
            fail("--round-stacks, --seed and --order go with --round")
        return {}
    stacks = round_stacks.split() if round_stacks else stack_ids
    try:
        return {s: rounds.schedule(s, stacks, rounds.DEFAULT_SEED if seed is None else seed, round_, repeats, rule)
                for s in stack_ids}
    except ValueError as e:
        fail(f"--round: {e} (--repeats sets the number of rounds)")


#: ``cooldown.idle_source`` for a baseline given with ``--idle-temp-c``.
IDLE_GIVEN = ("--idle-temp-c (make bench-all and the SkyPilot job read it with nvidia-smi on the host before the "
              "comparison's first stack)")


def cooldown_for(req: Request, dev: str) -> Cooldown | None:
    """``req``'s cooldown (``bench.run.gpu_state.Cooldown``) on a GPU, else None: its idle baseline is
    ``--idle-temp-c`` when given (read once before the comparison's first stack), else NVML's reading now."""
    if not req.cooldown_s:
        return None
    if dev != "gpu":
        click.echo("cooldown: GPU runs only; ignored on CPU")
        return None
    from bench.run.gpu_state import Cooldown

    cooldown = Cooldown(req.cooldown_s, idle_c=req.idle_temp_c, idle_source=IDLE_GIVEN)
    click.echo(f"cooldown: up to {req.cooldown_s:g} s before each cell, to {cooldown.idle_c} + 3 °C "
               f"(idle from {cooldown.idle_source})")
    return cooldown


def execute(req: Request, suite: str, make_cells) -> None:
    """Resolve device and size of ``req``, build the cells with ``make_cells(size, device)``, run them, summarise."""
    from bench.run.runner import run_cells

    stack_ids = stack_list(req.stacks)
    dev = resolve_device(req.device, stack_ids)
    size = req.size_for(dev)
    try:
        cells = make_cells(size, dev)
    except planning.PlanError as e:
        fail(str(e))
    repeats = req.repeats_for(dev)
    schedules = round_schedules(stack_ids, req.round_, req.round_stacks, req.seed, repeats, req.order)
    root = Path(os.environ.get("BENCH_RESULTS_DIR", "results"))
    out = req.out_dir or root / "runs" / f"{suite}-{size}-{dev}"
    if dev == "cpu":
        banner([f"CPU MODE: no GPU in use (--device {req.device}). Size: {size}.",
                "These numbers are smoke tests of the harness, NOT GPU benchmarks.",
                "Every result row carries device=cpu and this note."])
    if req.round_ is None:
        click.echo(f"run: {len(cells)} cells x {repeats} repeat(s) -> {out}")
    else:
        sched = schedules[stack_ids[0]]
        how = f"seed {sched['seed']}" if req.order == "shuffled" else f"rule {req.order}"
        click.echo(f"run: {len(cells)} cells, round {req.round_} of {repeats} ({how}, order "
                   f"{' '.join(sched['order'])}) -> {out}")
    cooldown = cooldown_for(req, dev)  # before the GEMM peak probe heats the GPU
    if dev == "gpu":  # the peak mfu_measured divides by, measured in this image on this GPU once
        from bench.run.probe import ensure_measured_peak

        for sid in stack_ids:
            click.echo(ensure_measured_peak(sid, root, os.environ.get("BENCH_VARIANT", "gpu")))
    gpu = None
    if dev == "gpu":  # read once: a record from another GPU (a preempted spot VM) is run again, never reused
        from bench.run.gpu_state import gpu_uuid

        gpu = gpu_uuid()
    outcomes = run_cells(cells, out, force=req.force, repeats=repeats, echo=click.echo, round_=req.round_,
                         schedules=schedules, cooldown=cooldown, gpu=gpu)
    bad = [o for o in outcomes if o.status not in ("ok", "unsupported")]
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    click.echo("summary: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + f" -> {out}")
    if bad:
        click.echo(f"{len(bad)} cell(s) did not succeed; see their records and .log files", err=True)
        sys.exit(1)


def stack_list(stacks) -> list[str]:
    return list(DEFAULT_STACKS) if "all" in stacks else list(dict.fromkeys(stacks))


def cell_inputs(req: Request, command: str = "run") -> dict:
    """``plan.expand``'s (``command`` run) or ``plan.sweep_cells``' (sweep) keyword inputs from ``req``."""
    kw = {"batch_size": req.batch_size, "epochs": req.epochs, "timeout_s": req.timeout_s,
          "telemetry_samples": req.telemetry_samples, "data": req.data}
    if command == "run":
        kw.update(steps=req.steps, seq_len=req.seq_len, sync=req.sync)
    return kw


@cli.command("run")
@request_options("run")
def run_cmd(**inputs) -> None:
    """Run every cell of the selection, each in its own process; one JSON result per cell."""
    from bench.core.settings import SettingsError

    req = Request(**inputs)
    stack_ids = stack_list(req.stacks)
    kw = cell_inputs(req)
    try:
        kw.update(req.variant_settings())
    except SettingsError as e:
        fail(f"--set: {e}")
    try:  # validate everything before probing a framework
        planning.expand(stack_ids, req.suite, "smoke", "cpu", req.workloads, req.tasks, **kw)
    except planning.PlanError as e:
        fail(str(e))
    execute(req, req.suite, lambda sz, dev: planning.expand(stack_ids, req.suite, sz, dev, req.workloads, req.tasks,
                                                             **kw))


def run_variant(compile_mode: str | None, no_augment: bool, assignments: tuple[str, ...] = ()) -> dict:
    """``plan.expand``'s ``settings`` and ``variant`` for ``bench run``'s variant flags (``Request.variant_settings``).

    Raises:
        SettingsError: a ``--set`` that names no knob or a value no engine allows (``knobs.parse_assignment``).
    """
    return Request(compile_mode=compile_mode, no_augment=no_augment, assignments=tuple(assignments)).variant_settings()


@cli.command("sweep")
@click.argument("grid_file", type=click.Path(dir_okay=False, path_type=Path))
@request_options("sweep")
def sweep_cmd(grid_file, **inputs) -> None:
    """Run a YAML grid of settings (see bench/run/sweeps/tuning.yaml); invalid combinations become
    'unsupported' records with the reason."""
    from bench.run import sweep

    req = Request(**inputs)
    stack_ids = stack_list(req.stacks)
    kw = cell_inputs(req, "sweep")
    try:  # validate everything before probing a framework
        grid = sweep.load(grid_file)
        planning.sweep_cells(grid, stack_ids, size="smoke", device="cpu", **kw)
    except (sweep.GridError, planning.PlanError) as e:
        fail(str(e))
    execute(req, grid.name, lambda sz, dev: planning.sweep_cells(grid, stack_ids, size=sz, device=dev, **kw))


@cli.command("collect")
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
    try:
        from bench.results.collect import collect, pivot_ms_per_step
        from bench.results.history import HISTORY_NAME, HistoryError, append_run
    except ImportError as e:
        fail(f"collect needs pandas ({e}); install dlbench[collect] or use the collector image")
    try:
        df, bad = collect(results_dir, out_csv)
    except (FileNotFoundError, ValueError) as e:
        fail(str(e))
    for path, reason in bad:
        click.echo(f"skipped {path}: {reason}", err=True)
    click.echo(f"wrote {out_csv}: {len(df)} rows, {len(bad)} file(s) skipped")
    if not no_history:
        import sqlite3

        history_path = history_path or out_csv.parent / HISTORY_NAME
        try:
            n = append_run(history_path, out_csv.stem, df, source=str(results_dir))
        except HistoryError as e:
            fail(f"{e} (the CSV {out_csv} is written)")
        except sqlite3.Error as e:  # e.g. a bucket's FUSE mount (goofys on S3) refuses SQLite's random writes
            fail(f"cannot write the history {history_path}: {type(e).__name__}: {e}; the CSV {out_csv} is written. "
                 "A bucket mounted with FUSE takes no SQLite writes: --history on a local disk, or --no-history")
        click.echo(f"history {history_path}: run {out_csv.stem}, {n} rows (replacing any earlier collect of it)")
    click.echo("ms/step (mean over steady-state steps):")
    click.echo(pivot_ms_per_step(df).to_string())


@cli.command("fidelity")
@click.option("--stack", "stack_id", required=True, help="Stack id.")
@click.option("--workload", default="cifar10_cnn", show_default=True,
              help="A workload whose step cost dominates.")
@click.option("--size", type=click.Choice(SIZES), default="full", show_default=True)
@click.option("--device", type=click.Choice(["auto", "cpu", "gpu"]), default="auto", show_default=True,
              envvar="BENCH_DEVICE")
@click.option("--epochs", type=click.IntRange(min=2), default=4, show_default=True,
              help="Epochs per run; the first compiles, the others give the steady ms/step.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the result as JSON (with the environment).")
def fidelity_cmd(stack_id, workload, size, device, epochs, out_file) -> None:
    """Harness ms/step under each timing cadence against a free-running loop (same model and data)."""
    from bench.results.record import write_json_atomic
    from bench.run.environment import capture, utc_now
    from bench.run.fidelity import measure

    try:
        planning.expand([stack_id], WORKLOADS[workload].suite if workload in WORKLOADS else "classic", size,
                        "cpu", [workload])
    except planning.PlanError as e:
        fail(str(e))
    dev = resolve_device(device, [stack_id])
    try:
        r = measure(stack_id, workload, dev, size, epochs)
    except Exception as e:  # one line, not a traceback wall
        raise click.ClickException(f"fidelity run failed: {type(e).__name__}: {e}".splitlines()[0]) from e
    click.echo(f"{stack_id} {workload} ({size}, {dev}), order {', '.join(r['order'])}: free-running loop "
               f"{r['handloop_ms_per_step']:.3f} ms/step")
    for cadence, c in r["cadences"].items():
        click.echo(f"  sync={cadence:<8} {c['ms_per_step']:.3f} ms/step, ratio {c['ratio']:.4f} "
                   f"({c['overhead_pct']:+.2f} %)")
    if out_file:
        write_json_atomic(out_file, {**r, "utc": utc_now(), "env": capture()})


@cli.command("doctor")
@click.option("--stack", "stack_id", default=lambda: os.environ.get("BENCH_STACK"), required=True,
              help="Stack id [default: this image's, $BENCH_STACK].")
@click.option("--device", type=click.Choice(["auto", "cpu", "gpu"]), default="auto", show_default=True,
              envvar="BENCH_DEVICE", help="gpu makes a missing GPU a failed check.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also save the checks and the measured GEMM TFLOP/s as JSON.")
def doctor_cmd(stack_id, device, out_file) -> None:
    """Preflight inside an image: the framework sees the GPU and runs a matmul; measured GEMM TFLOP/s."""
    from bench.core.checks import save, table
    from bench.run import probe

    if stack_id not in STACKS:
        fail(f"unknown stack {stack_id!r}; known: {', '.join(STACKS)}")
    checks, extra = probe.image_checks(stack_id, device)
    click.echo(table(checks))
    if out_file:
        save(out_file, "image", checks, extra)
    if any(c.state == "fail" for c in checks):
        sys.exit(1)


@cli.command("selftest")
@click.option("--device", type=click.Choice(["auto", "cpu", "gpu"]), default="auto", show_default=True,
              envvar="BENCH_DEVICE", help="auto: gpu when NVML finds one.")
@click.option("--framework", "backends", multiple=True, help="Only this framework: torch, jax or tensorflow "
              "(repeatable) [default: all three; those not installed are n/a].")
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the results as JSON.")
def selftest_cmd(device, backends, out_file) -> None:
    """The instrument checks itself: barrier, GEMM peak, math mode, energy, memory and MFU, each ours vs an
    independent measurement (docs/selftest.md). Exit 1 when a check fails."""
    from bench.run.selftest import run

    unknown = sorted(set(backends) - set(run.BACKENDS))
    if unknown:
        fail(f"unknown framework(s) {', '.join(unknown)}; known: {', '.join(run.BACKENDS)}")
    try:
        text, code = run.main(device, list(dict.fromkeys(backends)) or list(run.BACKENDS), out_file)
    except OSError as e:  # --out not writable: one line, not a traceback wall
        raise click.ClickException(f"selftest could not write {out_file}: {e.strerror or e}") from e
    click.echo(text)
    sys.exit(code)


@cli.command("fields")
def fields_cmd() -> None:
    """Describe every field of a result record: meaning [unit; rule across repeats] (bench.results.schema)."""
    for name, text in FIELDS.items():
        click.echo(f"{name}: {text}")


@cli.command("knobs")
def knobs_cmd() -> None:
    """The settings a cell or sweep may set, per engine, with their values."""
    from bench.core.knobs import DOCS, KNOBS
    from bench.core.settings import describe_allowed

    for engine, knobs in KNOBS.items():
        click.echo(f"{engine}:")
        for name, allowed in knobs.items():
            values = describe_allowed(allowed)
            click.echo(f"  {name:<20} {values}")
    click.echo(f"named variants (fit suites, Keras stacks): {fit_variants()}")
    click.echo("meaning:")
    for name, text in DOCS.items():
        click.echo(f"  {name}: {text}")


@cli.command("compare")
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
def compare_cmd(csv_a, csv_b, metric, alpha, threshold, out_csv, variant_a, variant_b) -> None:
    """Per-cell ratio B/A of a metric, with a significance test across repeats."""
    if (variant_a is None) != (variant_b is None):
        fail("--variant-a and --variant-b go together")
    try:
        import pandas as pd

        from bench.results.compare import compare, rule_text
        from bench.results.rows import read_rows
    except ImportError as e:
        fail(f"compare needs pandas and scipy ({e}); install dlbench[collect] or use the collector image")
    try:
        table = compare(read_rows(csv_a), read_rows(csv_b), metric, alpha, threshold,
                        (variant_a, variant_b) if variant_a is not None else None)
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        fail(str(e).splitlines()[0])
    with pd.option_context("display.width", 200, "display.max_colwidth", 60, "display.max_rows", None):
        click.echo(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    flagged = table[table["verdict"].isin(["higher", "lower"])]
    click.echo(f"{len(table)} cells compared; {len(flagged)} changed beyond noise "
               f"({rule_text(alpha, threshold)}); "
               f"{int((table['verdict'] == 'underpowered').sum())} underpowered (too few repeats)")
    if out_csv:
        table.to_csv(out_csv, index=False)


@cli.group("history")
def history_group() -> None:
    """The results history (every collected run's rows): list runs, query rows, export them."""


def _history_opt(f):
    return click.option("--history", "history_path", type=click.Path(dir_okay=False, path_type=Path),
                        default=Path("results/history.sqlite"), envvar="BENCH_HISTORY", show_default=True,
                        help="The history file (env BENCH_HISTORY).")(f)


def _history():
    try:
        from bench.results import history
    except ImportError as e:
        fail(f"history needs pandas ({e}); install dlbench[collect] or use the collector image")
    return history


@history_group.command("runs")
@_history_opt
def history_runs_cmd(history_path: Path) -> None:
    """The runs in the history, oldest first."""
    h = _history()
    try:
        table = h.runs(history_path)
    except h.HistoryError as e:
        fail(str(e))
    click.echo(table.to_string(index=False) if len(table) else f"{history_path}: no runs")


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
    h = _history()
    try:
        df = h.load(history_path, run)
    except h.HistoryError as e:
        fail(str(e))
    for name, values in (("stack", stacks), ("cell", cells)):
        unknown = sorted(set(values) - set(df[name]))
        if unknown:
            fail(f"no {name} {', '.join(unknown)} in the history (it has: {', '.join(sorted(set(df[name])))})")
        if values:
            df = df[df[name].isin(values)]
    if out_csv is not None:
        df.to_csv(out_csv, index=False)
        click.echo(f"wrote {out_csv}: {len(df)} rows")
        return
    cols = ["run", "date", "stack", "versions", "machine", "cell", "status", "ms_per_step_mean", "repeats_n"]
    click.echo(df[cols].to_string(index=False) if len(df) else "no rows")


@history_group.command("export-bmf")
@_history_opt
@click.option("--run", default=None, help="The run to export [default: the latest].")
@click.option("-o", "--output", "out_json", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="BMF JSON file to write (for `bencher run --adapter json --file`).")
def history_bmf_cmd(history_path: Path, run: str | None, out_json: Path) -> None:
    """One run's ok cells in Bencher Metric Format: latency (ns per step), throughput (examples/s)."""
    import json

    h = _history()
    try:
        if run is None:
            listed = h.runs(history_path)
            if listed.empty:
                fail(f"{history_path}: no runs")
            run = str(listed["run"].iloc[-1])
        bmf = h.to_bmf(h.load(history_path, run))
    except h.HistoryError as e:
        fail(str(e))
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(bmf, indent=2) + "\n")
    click.echo(f"wrote {out_json}: run {run}, {len(bmf)} benchmarks")


@cli.command("report")
@click.argument("sources", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory for report.md and plots/<run>/*.png [default: the first source's directory].")
@click.option("--price-per-hour", type=click.FloatRange(min=0), default=None, envvar="BENCH_PRICE_PER_HOUR",
              help="$ per GPU-hour: the report adds each run's cost beside its GPU-hours [default: none, never "
                   "guessed].")
@click.option("--history", "history_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Results history for the History section and its trend plots [default: history.sqlite in the "
                   "first source's directory, when there].")
def report_cmd(sources, out_dir, price_per_hour, history_path) -> None:
    """Markdown report with plots from collected CSVs (a directory: every bench CSV in it, one section each)."""
    try:
        from bench.results.report import load_runs, write_report
    except ImportError as e:
        fail(f"report needs pandas and matplotlib ({e}); install dlbench[collect] or use the collector image")
    try:
        runs, warnings = load_runs(list(sources))
        for w in warnings:
            click.echo(f"warning: {w}", err=True)
        first = sources[0]
        if history_path is not None and not history_path.is_file():
            fail(f"no history at {history_path}")
        history_path = history_path or (first if first.is_dir() else first.parent) / "history.sqlite"
        path = write_report(runs, out_dir or (first if first.is_dir() else first.parent), price_per_hour,
                            history_path)
    except ValueError as e:
        fail(str(e))
    click.echo(f"wrote {path}")


def main(argv: list[str] | None = None) -> None:
    """Entry point: click errors become one line on stderr with exit code 2."""
    try:
        rv = cli.main(args=argv, prog_name="bench", standalone_mode=False)
    except click.UsageError as e:
        click.echo(f"bench: error: {e.format_message()}", err=True)
        sys.exit(USAGE_EXIT)
    except click.Abort:
        click.echo("bench: aborted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        click.echo(f"bench: error: {e.format_message()}", err=True)
        sys.exit(e.exit_code)
    sys.exit(rv if isinstance(rv, int) else 0)

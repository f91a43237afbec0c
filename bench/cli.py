"""The ``bench`` command line: list, run, collect.

Bad input gets one line on stderr and exit code 2; a run exits 1 when any cell did not succeed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from bench import plan as planning
from bench.record import FIELDS
from bench.stacks import STACKS, get_stack
from bench.workloads import SIZES, SUITES, WORKLOADS

USAGE_EXIT = 2
BANNER_WIDTH = 78


def fail(message: str) -> None:
    """Raise a usage error that ``main`` prints as one line (exit code 2)."""
    raise click.UsageError(message)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Benchmark matrix: Keras 2, Keras 3 (TensorFlow, JAX, PyTorch) and plain PyTorch."""


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
        click.echo(f"  {w.name:<24} tasks {','.join(w.tasks):<8} batch {w.batch_size:<4} "
                   f"{w.optimizer} lr {w.learning_rate:g}; {w.source}")
    click.echo(f"tasks: {', '.join(planning.all_tasks())}")
    click.echo(f"sizes: {', '.join(SIZES)}")


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
    from bench.runner import probe_gpus

    return probe_gpus(get_stack(stack_id))


def banner(lines: list[str]) -> None:
    rule = "!" * BANNER_WIDTH
    click.echo("\n".join([rule, *(f"!! {line}" for line in lines), rule]), err=True)


@cli.command("run")
@click.option("--stack", "stacks", multiple=True, required=True, metavar="STACK",
              help=f"Stack id ({', '.join(STACKS)}) or 'all'; repeatable.")
@click.option("--suite", default="classic", show_default=True, help="Suite to run.")
@click.option("--workload", "workloads", multiple=True, help="Only these workloads; repeatable.")
@click.option("--task", "tasks", multiple=True, help="Only these tasks (fit, ...); repeatable.")
@click.option("--size", type=click.Choice(["auto", *SIZES]), default="auto", show_default=True,
              help="smoke: tiny and fast; full: published sizes. auto: full on GPU, smoke on CPU.")
@click.option("--device", type=click.Choice(["auto", "cpu", "gpu"]), default="auto", show_default=True,
              envvar="BENCH_DEVICE", help="gpu makes a missing GPU an error.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run directory [default: $BENCH_RESULTS_DIR/runs/<suite>-<size>-<device>].")
@click.option("--force", is_flag=True, help="Run cells again even when a result exists.")
@click.option("--batch-size", type=click.IntRange(min=1), default=None, help="Override batch size.")
@click.option("--epochs", type=click.IntRange(min=1), default=None, help="Override epochs.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Per-cell time limit in seconds [default: 600 smoke, 3600 full].")
def run_cmd(stacks, suite, workloads, tasks, size, device, out_dir, force, batch_size, epochs,
            timeout_s) -> None:
    """Run every cell of the selection, each in its own process; one JSON result per cell."""
    from bench.runner import run_cells

    stack_ids = list(STACKS) if "all" in stacks else list(dict.fromkeys(stacks))
    try:  # validate everything before probing a framework
        planning.expand(stack_ids, suite, "smoke", "cpu", workloads, tasks, batch_size=batch_size,
                        epochs=epochs, timeout_s=timeout_s)
    except planning.PlanError as e:
        fail(str(e))
    dev = resolve_device(device, stack_ids)
    size = size if size != "auto" else ("full" if dev == "gpu" else "smoke")
    cells = planning.expand(stack_ids, suite, size, dev, workloads, tasks, batch_size=batch_size,
                            epochs=epochs, timeout_s=timeout_s)
    root = Path(os.environ.get("BENCH_RESULTS_DIR", "results"))
    out = out_dir or root / "runs" / f"{suite}-{size}-{dev}"
    if dev == "cpu":
        banner([f"CPU MODE: no GPU in use (--device {device}). Size: {size}.",
                "These numbers are smoke tests of the harness, NOT GPU benchmarks.",
                "Every result row carries device=cpu and this note."])
    click.echo(f"run: {len(cells)} cells -> {out}")
    outcomes = run_cells(cells, out, force=force, echo=click.echo)
    bad = [o for o in outcomes if o.status not in ("ok", "unsupported")]
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    click.echo("summary: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + f" -> {out}")
    if bad:
        click.echo(f"{len(bad)} cell(s) did not succeed; see their records and .log files", err=True)
        sys.exit(1)


@cli.command("collect")
@click.argument("results_dir", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out_csv", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="CSV file to write.")
def collect_cmd(results_dir: Path, out_csv: Path) -> None:
    """Merge every cell JSON under RESULTS_DIR into one CSV and print ms/step by workload x stack."""
    try:
        from bench.collect import collect, pivot_ms_per_step
    except ImportError as e:
        fail(f"collect needs pandas ({e}); install dlbench[collect] or use the collector image")
    try:
        df, bad = collect(results_dir, out_csv)
    except (FileNotFoundError, ValueError) as e:
        fail(str(e))
    for path, reason in bad:
        click.echo(f"skipped {path}: {reason}", err=True)
    click.echo(f"wrote {out_csv}: {len(df)} rows, {len(bad)} file(s) skipped")
    click.echo("ms/step (mean over steady-state steps):")
    click.echo(pivot_ms_per_step(df).to_string())


@cli.command("fidelity")
@click.option("--stack", "stack_id", required=True, help="Stack id.")
@click.option("--workload", default="cifar10_cnn", show_default=True,
              help="A workload whose step cost dominates.")
@click.option("--size", type=click.Choice(SIZES), default="full", show_default=True)
@click.option("--device", type=click.Choice(["auto", "cpu", "gpu"]), default="auto", show_default=True,
              envvar="BENCH_DEVICE")
@click.option("--epochs", type=click.IntRange(min=2), default=3, show_default=True)
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the result as JSON (with the environment).")
def fidelity_cmd(stack_id, workload, size, device, epochs, out_file) -> None:
    """Harness ms/step against a hand-timed loop (same model, data and synchronisation)."""
    from bench.environment import capture, utc_now
    from bench.fidelity import measure
    from bench.record import write_json_atomic

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
    click.echo(f"{stack_id} {workload} ({size}, {dev}): harness {r['harness_ms_per_step']:.3f} ms/step, "
               f"hand-timed loop {r['handloop_ms_per_step']:.3f} ms/step, ratio {r['ratio']:.4f} "
               f"({r['overhead_pct']:+.2f} %)")
    if out_file:
        write_json_atomic(out_file, {**r, "utc": utc_now(), "env": capture()})


@cli.command("fields")
def fields_cmd() -> None:
    """Describe every field of a result record."""
    for name, text in FIELDS.items():
        click.echo(f"{name}: {text}")


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

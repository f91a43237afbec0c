"""``bench run``, ``sweep``, ``fidelity``, ``doctor`` and ``selftest``: parse, call the one function that runs it
(``bench.run.session``, ``bench.run.probe``, ``bench.run.peaks``, ``bench.run.selftest``), exit with its code."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import click

from bench.cli.common import device_option, fail, output_file, output_folder, request_options
from bench.core.errors import InputError
from bench.core.request import Request
from bench.core.stacks import STACKS
from bench.core.words import Device, Size
from bench.run import session


@contextlib.contextmanager
def _checked_out(inputs: dict[str, object]) -> Iterator[None]:
    """``output_folder`` on ``--out``, else on the root of the default run directory (``session.runs_root``), before
    anything is planned, for the run's body: a run refused before its first record (bad input, no GPU for ``--device
    gpu``: ``InputError``, printed as one line) leaves none of the folders the check made.

    Raises:
        click.BadParameter: a folder the run could not write into.
        click.UsageError: the body's ``InputError`` (``fail``).
    """
    out = inputs.get("out_dir")
    folder, option = ((out, "'--out'") if isinstance(out, Path) else
                      (session.runs_root(), "the run directory's root ($BENCH_RESULTS_DIR/runs; --out sets another)"))
    with output_folder(folder, option):
        try:
            yield
        except InputError as e:
            fail(str(e))


@click.command("run")
@request_options("run")
def run_cmd(**inputs: object) -> None:
    """Run every cell of the selection, each in its own process; one JSON result per cell."""
    with _checked_out(inputs):
        code = session.run_request(Request(**inputs))  # type: ignore[arg-type]
    if code:
        sys.exit(code)


@click.command("sweep")
@click.argument("grid_file", type=click.Path(dir_okay=False, path_type=Path))
@request_options("sweep")
def sweep_cmd(grid_file: Path, **inputs: object) -> None:
    """Run a YAML grid of settings (see bench/run/sweeps/tuning.yaml); invalid combinations become
    'unsupported' records with the reason."""
    with _checked_out(inputs):
        code = session.run_sweep(Request(**inputs), grid_file)  # type: ignore[arg-type]
    if code:
        sys.exit(code)


@click.command("fidelity")
@click.option("--stack", "stack_id", required=True, help="Stack id.")
@click.option("--workload", default="cifar10_cnn", show_default=True,
              help="A workload whose step cost dominates.")
@click.option("--size", type=click.Choice(get_args(Size)), default="full", show_default=True)
@device_option()
@click.option("--epochs", type=click.IntRange(min=2), default=4, show_default=True,
              help="Epochs per run; the first compiles, the others give the steady ms/step.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the result as JSON (with the environment).")
def fidelity_cmd(stack_id: str, workload: str, size: Size, device: Device, epochs: int,
                 out_file: Path | None) -> None:
    """Harness ms/step under each timing cadence against a free-running loop (same model and data)."""
    from bench.core.errors import CommandFailed

    # a refused or failed measurement leaves none of the folders made for --out (output_folder)
    with output_folder(out_file.parent, "'--out'") if out_file else contextlib.nullcontext():
        try:
            session.fidelity(stack_id, workload, size, device, epochs, out_file)
        except InputError as e:
            fail(str(e))
        except CommandFailed as e:
            raise click.ClickException(str(e)) from e


@click.command("doctor")
@click.option("--stack", "stack_id", default=lambda: os.environ.get("BENCH_STACK"), required=True,
              help="Stack id [default: this image's, $BENCH_STACK].")
@device_option("gpu makes a missing GPU a failed check.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also save the checks and the measured GEMM TFLOP/s as JSON (after each mode).")
def doctor_cmd(stack_id: str, device: Device, out_file: Path | None) -> None:
    """Preflight inside an image: the framework sees the GPU and runs a matmul; measured GEMM TFLOP/s."""
    from bench.core.checks import table
    from bench.run import peaks, probe

    if stack_id not in STACKS:
        fail(f"unknown stack {stack_id!r}; known: {', '.join(STACKS)}")
    # stopped before the first mode is saved (Ctrl-C, a crash): none of the folders made for --out is left
    with output_file(out_file, "'--out'"):
        write = peaks.peak_writer(out_file) if out_file else None  # each mode saved once measured: a signal loses none
        checks, extra = probe.image_checks(stack_id, device, progress=write)
        click.echo(table(checks))
        if write:
            write(checks, extra)
    if any(c.state == "fail" for c in checks):
        sys.exit(1)


@click.command("selftest")
@device_option("auto: gpu when NVML finds one.")
@click.option("--framework", "backends", multiple=True, help="Only this framework: torch, jax or tensorflow "
              "(repeatable) [default: all three; those not installed are n/a].")
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the results as JSON.")
def selftest_cmd(device: Device, backends: tuple[str, ...], out_file: Path | None) -> None:
    """The instrument checks itself: barrier, GEMM peak, math mode, energy, memory and MFU, each ours vs an
    independent measurement (docs/selftest.md). Exit 1 when a check fails."""
    from bench.run.selftest import run

    unknown = sorted(set(backends) - set(run.BACKENDS))
    if unknown:
        fail(f"unknown framework(s) {', '.join(unknown)}; known: {', '.join(run.BACKENDS)}")
    # stopped before its record is written (a crash, a failed write): none of the folders made for --out is left
    with output_file(out_file, "'--out'"):
        try:
            text, code = run.main(device, list(dict.fromkeys(backends)) or list(run.BACKENDS), out_file)
        except OSError as e:  # a write that fails after the early check (a full disk): one line, not a traceback wall
            raise click.ClickException(f"selftest could not write {out_file}: {e.strerror or e}") from e
    click.echo(text)
    sys.exit(code)


COMMANDS = (run_cmd, sweep_cmd, fidelity_cmd, doctor_cmd, selftest_cmd)

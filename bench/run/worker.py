"""Runs exactly one cell in its own process: ``python -m bench.run.worker CELL.json OUT.json [SAMPLES.csv]``.

The worker always writes OUT.json (status ok, failed, oom or unsupported); the runner adds what only
the parent can see (exit code, wall time, peak RSS, the CUDA JIT cache's growth) and writes the final record.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import traceback
from pathlib import Path
from typing import Any

from bench.core import knobs
from bench.core.atomic import write_json_atomic
from bench.core.stacks import get_stack
from bench.instruments import profile
from bench.instruments.environment import capture, stack_pins, utc_now
from bench.instruments.profile.rerun import ProfileRun, batches, short_call_note
from bench.instruments.profile.xla import tf_compiled
from bench.instruments.timing import clock
from bench.models import flops
from bench.models.engines import Unsupported, frameworks, math_mode, oom
from bench.models.workloads import get_workload
from bench.results import derived
from bench.results.cell import Cell
from bench.results.record import new_record
from bench.results.schema import EffectiveSettings, Env, Profile, Record
from bench.run.cellenv import EnvironmentProblem, gpu_env_problem
from bench.run.scenarios import scenario_of

CPU_NOTE = "CPU run: smoke-test numbers, not comparable with GPU benchmarks"
MIG_NOTE = ("MIG mode: the cell ran on a GPU slice, while NVML's power and energy are the whole GPU's and a "
            "datasheet peak is the whole GPU's (MFU null): not comparable with a full GPU's")


def run_cell(cell: Cell, samples_csv: Path | None = None, profile_dir: Path | None = None,
             out_file: Path | None = None) -> dict[str, Any]:
    """Run ``cell`` and return its record's JSON (``fill_record``'s, written by ``main``; before a profile also to
    ``out_file``)."""
    return fill_record(cell, samples_csv, profile_dir, out_file).model_dump(exclude_unset=True)


def fill_record(cell: Cell, samples_csv: Path | None = None, profile_dir: Path | None = None,
                out_file: Path | None = None) -> Record:
    """Run ``cell`` and fill its one typed ``Record`` (never raises for a failure of the cell itself).

    ``samples_csv``: where to write the raw telemetry samples (None: not written). ``profile_dir``: where a cell
    that asks for a profile (``Cell.profile``, repeat 1) writes its trace, ``<run_id>.trace.json.gz`` (None: no
    profile); the profile runs once every timed number, the environment and the peak memory are in ``rec``, and
    that record is first written to ``out_file`` (atomically, ``profile.reason`` ``profile.UNFINISHED``), so that a
    profile that runs out of time or memory loses nothing measured.
    """
    again, started = None, clock()
    rec = Record.model_validate(new_record(cell), strict=True)  # the skeleton: every top-level field given
    rec.started_utc = utc_now()
    if cell.device == "cpu":
        rec.notes.append(CPU_NOTE)
    try:
        stack, w = get_stack(cell.stack), get_workload(cell.workload)
        if cell.task not in w.tasks:
            raise Unsupported(f"{w.name} has no task {cell.task!r}")
        scenario = scenario_of(w)
        reason = scenario.unsupported(w, stack)
        reason = (reason or knobs.check(stack, dict(cell.settings), scenario.name)
                  or knobs.model_knob_problem(dict(cell.settings), w.name, getattr(w, "keras_knobs", ())))
        if reason:
            raise Unsupported(reason)
        problem = gpu_env_problem(stack, cell.device, os.environ)
        if problem:
            raise EnvironmentProblem(problem)
        if stack.backend != "tensorflow":
            frameworks.hide_gpus_from_tensorflow()
        again = scenario.run(rec, cell, stack, w, samples_csv)
        # the TF32 switches as the cell ended (after every change an engine or library made), and what they meant
        ended = {**rec.settings.model_dump(exclude_unset=True), **math_mode.tf32_state(stack.backend)}
        math = math_mode.tf32_math(ended, cell.device, rnn_cudnn=math_mode.rnn_on_cudnn(stack.family, cell.device))
        rec.settings = EffectiveSettings(**{**ended, **{f"tf32_{kind}": on for kind, on in math.items()}})
        rec.status = "ok"
    except Unsupported as e:
        rec.status, rec.reason = "unsupported", str(e)
    except EnvironmentProblem as e:  # one line, no traceback: the fix is in the environment
        rec.status, rec.reason = "failed", str(e)
    except BaseException as e:  # every failure becomes a record
        rec.status = "oom" if oom.is_oom(e) else "failed"
        rec.reason = f"{type(e).__name__}: {e}".splitlines()[0][:500]
        rec.traceback = traceback.format_exc()[-4000:]
    add_env(rec, cell)
    if rec.status == "ok" and "flops_per_step" in rec.metrics.model_fields_set:  # step-timed: needs env's GPU name
        add_mfu(rec)
    rec.memory.host_peak_rss_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if rec.status == "ok" and again is not None and cell.profile and (cell.repeat or 1) == 1 and profile_dir:
        if out_file is not None:
            write_unfinished(rec, out_file)
        add_profile(rec, cell, again, profile_dir, clock() - started)
    rec.finished_utc = utc_now()
    return rec


def too_long(again: ProfileRun, rec: Record, cell: Cell, spent_s: float = 0.0) -> str | None:
    """Why the profile is not taken when its call would use over half the time left of the cell's limit
    (``Cell.timeout_s`` less ``spent_s``, the seconds the cell has run: the runner counts the limit from the
    process's start, a second or two before): its steps (``rerun.batches``: a Keras fit whose timed calls ran 512
    steps, ``settings.steps_per_call``, runs 3 x 512) at the timed p50 ms/step, a lower bound (a profiler only adds
    to a step). None when it fits, or without a timed p50."""
    p50 = rec.metrics.ms_per_step_p50
    if not p50:
        return None
    n = batches(again, min(profile.STEPS, profile.MAX_STEPS))
    need_s, left_s = n * p50 / 1000.0, cell.timeout_s - spent_s
    if need_s <= left_s / 2:
        return None
    return (f"not taken: its call runs {n} steps, at least {need_s:.0f} s at the timed p50 of {p50:.1f} ms/step, "
            f"over half the {max(left_s, 0.0):.0f} s left of the cell's {cell.timeout_s:g} s limit")


def add_profile(rec: Record, cell: Cell, again: ProfileRun, profile_dir: Path, spent_s: float = 0.0) -> None:
    """The cell's ``profile`` block (``bench.instruments.profile.capture``: ``again``'s steps under the framework's
    profiler, the trace in ``profile_dir``), and a note when the profile failed or was not taken (``too_long``,
    ``spent_s``: the seconds the cell has run; the timed numbers stand), or when its Keras calls left out the
    timed epochs' shorter last call (``short_call_note``)."""
    stack = get_stack(cell.stack)
    why = too_long(again, rec, cell, spent_s)
    if why:
        rec.profile = Profile(reason=why)
    else:
        try:
            compiled = tf_compiled(rec.settings.model_dump()) if stack.backend == "tensorflow" else None
            block = profile.capture(again, stack.backend, cell.device, profile_dir / cell.run_id,
                                    frameworks.make_barrier(stack.backend, cell.device), xla=compiled)
            rec.profile = Profile.model_validate(profile.relate(block, rec.metrics.ms_per_step_p50))
        except Exception as e:  # a profile never fails the cell it profiles
            rec.profile = Profile(reason=f"{type(e).__name__}: {e}".splitlines()[0][:500])
    if rec.profile.reason:
        rec.notes.append(profile.none_note(rec.profile.reason))
    elif note := short_call_note(rec.settings.steps_per_call, rec.metrics.steps_per_epoch):
        rec.notes.append(note)


def write_unfinished(rec: Record, out_file: Path) -> None:
    """Write ``rec``, every timed number in it, to ``out_file`` as the record of a cell whose profile did not finish
    (``profile.UNFINISHED``); ``rec`` itself is left as it is."""
    before = rec.model_copy(deep=True)
    before.profile = Profile(reason=profile.UNFINISHED)
    before.notes.append(profile.none_note(profile.UNFINISHED))
    before.finished_utc = utc_now()
    write_json_atomic(out_file, before.model_dump(exclude_unset=True))


def add_env(rec: Record, cell: Cell) -> None:
    """The record's ``env`` block and the note it implies for a GPU cell: MIG mode. The CUDA JIT cache's
    growth (``env.cuda_cache``) is the runner's to add, once this process has ended
    (``bench.run.runner.add_cuda_cache``)."""
    try:
        rec.env = Env.model_validate({**capture(), **stack_pins(cell.stack)})
    except Exception as e:
        rec.env = Env(error=f"{type(e).__name__}: {e}")
    if rec.env.pins_ok is False:  # the image does not hold what the derived stack declares
        rec.notes.append(f"pins: installed {rec.env.pins}, not the declared {get_stack(cell.stack).pins}")
    if rec.env.gpu is not None and rec.env.gpu.mig_mode and cell.device == "gpu":
        rec.notes.append(MIG_NOTE)


def _gpu(rec: Record) -> dict[str, Any] | None:
    """The record's ``env.gpu`` as its JSON (what ``bench.run.peaks.measured_peak`` matches), None without one."""
    return None if rec.env is None or rec.env.gpu is None else rec.env.gpu.model_dump(exclude_unset=True)


def add_mfu(rec: Record) -> None:
    """MFU = model FLOPs per step / step time / the GPU's dense peak for the math in effect (null + reason): the
    dtype, and for float32 whether matmuls and convolutions could use TF32 (``settings.tf32_matmul`` /
    ``tf32_conv``; where they differ, ``flops.peak_flops`` combines the two peaks by the cell's share of FLOPs in
    convolutions). ``mfu_measured`` divides by the GEMM peak ``make doctor`` measured in this image on this GPU
    (``measured_peak_in_effect``; null + reason without one)."""
    m, s, seen = rec.metrics, rec.settings, _gpu(rec) or {}
    gpu = seen.get("name") if rec.device == "gpu" else None
    precision = s.precision if "precision" in s.model_fields_set else "float32"
    tf32_mm, tf32_conv = bool(s.tf32_matmul), bool(s.tf32_conv)
    share = flops.conv_fraction(rec.workload, rec.task)
    peak, why = flops.peak_flops(gpu, precision, tf32_mm, tf32_conv, share)
    if gpu and seen.get("mig_mode"):  # a slice, whatever NVML names it
        peak, why = None, flops.MIG_PEAK_REASON
    m.peak_flops, m.peak_source = peak, why
    measured, source = measured_peak_in_effect(rec, precision, tf32_mm, tf32_conv, share) \
        if gpu and rec.stack else (None, "no GPU in this record")
    m.measured_peak_flops, m.measured_peak_source = measured, source
    derived.flops_rates(m)


def measured_peak_in_effect(rec: Record, precision: str, tf32_mm: bool, tf32_conv: bool,
                            share: float | None) -> tuple[float | None, str]:
    """The GEMM FLOP/s ``make doctor`` measured in this image on this record's GPU under its driver, image and
    libraries (``bench.run.peaks.measured_peak``, ``software_identity`` of ``env``) for the math in effect: the
    matmul mode's, or where matmuls and convolutions ran in different modes, the two combined by the cell's
    convolution share of FLOPs (``flops.combined_peak``; a convolution is taken to reach what a GEMM of its math
    mode reaches). (None, why) when a measurement or the share is missing."""
    from bench.run.peaks import measured_peak, results_root, software_identity

    results = results_root()
    stack, flavor, gpu = rec.stack, os.environ.get("BENCH_FLAVOR", rec.device), _gpu(rec)
    env = rec.env
    software = software_identity((gpu or {}).get("driver"), (env.image_id or env.image_digest) if env else None,
                                 env.packages if env else {})
    matmul, source = measured_peak(results, stack, flavor, gpu, precision, tf32_mm, software)
    if precision != "float32" or tf32_mm == tf32_conv or matmul is None:
        return matmul, source
    conv, conv_source = measured_peak(results, stack, flavor, gpu, precision, tf32_conv, software)
    if conv is None or share is None:
        return None, conv_source if conv is None else "the cell's share of FLOPs in convolutions is not tabulated"
    return flops.combined_peak(matmul, conv, share), (f"matmuls: {source}; convolutions: {conv_source}; "
                                                      f"{100 * share:.1f} % of the FLOPs in convolutions")


def exit_without_teardown(code: int) -> None:
    """End the process now, skipping the interpreter's teardown (module GC, framework thread pools and
    allocators): 0.5-1.5 s of every CPU cell's process on a 2-core CPU, after the record is on disk.
    Output is flushed first; no atexit handler runs."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv: list[str]) -> int:
    """``python -m bench.run.worker CELL.json OUT.json [SAMPLES.csv]``: run the cell, write OUT.json atomically.

    A CPU cell's process then ends without the interpreter's teardown (``exit_without_teardown``); a GPU
    cell's exits normally, so the CUDA driver tears its context down and writes its JIT cache
    (``CUDA_CACHE_PATH``) as it would in any program; the runner measures the cache after that.
    Returns the exit code (0: a record was written).
    """
    cell_file, out_file, *rest = argv
    cell = Cell.from_dict(json.loads(Path(cell_file).read_text()))
    rec = run_cell(cell, Path(rest[0]) if rest else None, Path(out_file).parent, Path(out_file))
    write_json_atomic(Path(out_file), rec)
    if rec["status"] == "failed":
        print(rec.get("traceback", ""), file=sys.stderr)
    if cell.device == "cpu":
        exit_without_teardown(0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

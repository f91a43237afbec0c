"""Runs cells one by one, each in its own process with a time limit; never imports a framework.

For each cell: the worker writes its record to a scratch file; the runner adds what only the parent
sees (exit status, wall time, peak RSS from ``wait4``, the CUDA JIT cache's growth over the whole
process) and writes ``<stack>/<cell_id>.json`` atomically. A worker that dies without a record (killed,
out of memory, time limit) still gets one (``bench.run.cellprocess``). On SIGTERM or SIGINT (``bench.core.interrupt``)
the running cell's process group is killed, its record is written (``timeout``, "interrupted by SIGTERM (...)") and
no other cell starts: ``Interrupted`` ends the run, every record already written kept.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.core import interrupt
from bench.core.atomic import write_json_atomic
from bench.core.stacks import get_stack
from bench.results.cell import Cell
from bench.results.record import FINAL_STATUSES, REPEATS_DIR, RecordError, load_record, result_path
from bench.results.repeats import aggregate
from bench.results.schema import CudaCache, EffectiveSettings, Env, Memory, Process, Record
from bench.run import gpu_state, profile
from bench.run.cellenv import cell_env, compile_cache_setting, compile_caches
from bench.run.cellprocess import wait_for_worker, worker_record
from bench.run.environment import cuda_cache_block, cuda_cache_bytes, git_commit
from bench.run.gpu_state import Cooldown
from bench.run.scenarios import scenario_of
from bench.run.workloads import WORKLOADS

WORKER = [sys.executable, "-m", "bench.run.worker"]


#: The cache fills with whatever PTX the driver compiles: a wheel's PTX for a GPU newer than its machine code, and
#: PTX generated at run time (torch's NVRTC kernels where it does not build a cubin for this GPU, cuDNN's
#: runtime-fused kernels), so its growth does not say which.
PTX_JIT_NOTE = ("the CUDA JIT cache grew during this cell: the driver JIT-compiled code during the cell (PTX for a "
                "GPU newer than a wheel's machine code, or runtime-compiled kernels): its compile time may be "
                "inside the first epoch/step (later cells reuse the cache)")


def add_cuda_cache(rec: Record, env: Mapping[str, str], bytes_before: int | None, exited: bool = True) -> None:
    """Put ``env.cuda_cache`` (``bench.run.environment.cuda_cache_block``: the CUDA JIT cache's growth since
    ``bytes_before``, bytes) into ``rec``, and ``PTX_JIT_NOTE`` when it grew. Called once the worker process
    has ended: the driver writes the cache as the process's CUDA context is torn down, after the worker's
    own record is on disk; a process that did not exit (``exited`` False: killed, crashed) may not have written
    it."""
    block = cuda_cache_block(bytes_before, env, exited)
    rec.env = rec.env or Env()
    rec.env.cuda_cache = CudaCache.model_validate(block)
    if block["jit_compiled"]:
        rec.notes = [*rec.notes, PTX_JIT_NOTE]  # assigned: a record without notes gets the field


@dataclass
class Outcome:
    """What happened to one cell in this invocation (``skipped`` = already done earlier)."""

    cell: Cell
    status: str
    skipped: bool = False
    record: Record | None = None


def before_cell(cell: Cell, cooldown: Cooldown | None) -> dict[str, Any]:
    """GPU cells: the record's ``gpu_before`` (other processes on the GPU, temperature) and, with a
    ``cooldown``, its ``cooldown`` block, taken after the wait. Empty on CPU."""
    if cell.device != "gpu":
        return {}
    out: dict[str, Any] = {}
    if cooldown is not None:
        out["cooldown"] = cooldown.wait()
    out["gpu_before"] = gpu_state.snapshot()
    return out


def run_one(cell: Cell, out_dir: Path, cooldown: Cooldown | None = None) -> Record:
    """Run ``cell`` in a child process, fill its typed ``Record`` (the worker's, read back) with what only the parent
    sees and write it once; returns the record. On a GPU, first
    the optional ``cooldown`` and the check for other processes on the GPU (``bench.run.gpu_state``). The process
    gets fresh torch.compile caches (``compile_caches``); the CUDA JIT cache is measured before it starts and
    after it has ended (``add_cuda_cache``)."""
    interrupt.check()  # a signal held back while the previous cell's record was written: start no other
    stack = get_stack(cell.stack)
    before = before_cell(cell, cooldown)
    final = result_path(out_dir, cell)
    work = final.parent / ".work"
    work.mkdir(parents=True, exist_ok=True)
    cell_file, worker_out = work / f"{cell.run_id}.cell.json", work / f"{cell.run_id}.worker.json"
    log_file = final.with_suffix(".log")
    samples = [str(final.with_suffix(".telemetry.csv"))] if cell.telemetry_samples else []
    worker_out.unlink(missing_ok=True)
    cell_file.write_text(json.dumps(cell.to_dict()))
    # a signal to bench kills the worker's group and is held back until this cell's record is written
    with interrupt.shielded():
        with compile_caches(stack) as caches:
            env = {**cell_env(stack, cell.device, cell.settings), **caches}
            cuda_cache_before = cuda_cache_bytes(env)
            start = time.perf_counter()
            args = [*WORKER, str(cell_file), str(worker_out), *samples]
            rc, usage, timed_out, signum = wait_for_worker(args, env, log_file, cell.timeout_s)
            wall = time.perf_counter() - start

        rec = worker_record(cell, worker_out, rc, timed_out, log_file, (signum, wall), env)
        profile.place(rec, work, final, out_dir)
        profile.discard(work, cell.run_id)
        # GPU-seconds: the GPU is the cell's for its whole process (cost accounting, docs/cloud.md)
        rec.process = Process(exit_code=rc, wall_s=wall, timeout_s=cell.timeout_s,
                              max_rss_bytes=usage.ru_maxrss * 1024, log=log_file.name,
                              gpu_s=wall if cell.device == "gpu" else 0.0)
        rec.memory = rec.memory or Memory()
        if "host_peak_rss_bytes" not in rec.memory.model_fields_set:  # the worker's own reading comes first
            rec.memory.host_peak_rss_bytes = usage.ru_maxrss * 1024
        rec.update(before)
        add_cuda_cache(rec, env, cuda_cache_before, exited=rc == 0)
        if caches:
            rec.settings = rec.settings or EffectiveSettings()
            rec.settings.compile_cache = compile_cache_setting(env)
        note = gpu_state.busy_note(before.get("gpu_before") or {})
        if note:
            rec.notes = [*rec.notes, note]
        write_record(final, rec)
        worker_out.unlink(missing_ok=True)
        cell_file.unlink(missing_ok=True)
        return rec


def write_record(path: Path, rec: Record) -> None:
    """Write ``rec`` atomically as its JSON: the fields it was given (``model_dump(exclude_unset=True)``)."""
    write_json_atomic(path, rec.model_dump(exclude_unset=True))


def existing_record(cell: Cell, out_dir: Path, repeats: int = 1, gpu: str | None = None) -> Record | None:
    """A valid record already on disk for ``cell`` (aggregated over ``repeats`` repeats) and made with its inputs
    on this run's GPU ``gpu`` (``input_mismatch``), else None."""
    path = result_path(out_dir, cell)
    if not path.exists():
        return None
    try:
        rec = load_record(path)
    except RecordError:
        return None
    n = rec.repeats.n if rec.repeats is not None and "n" in rec.repeats.model_fields_set else 1
    if n != repeats or input_mismatch(rec, cell, gpu):
        return None
    return rec


def record_gpu(rec: Record) -> str | None:
    """The NVML UUID of the GPU ``rec`` was measured on (``env.gpu.uuid``; None on CPU or without NVML)."""
    return rec.env.gpu.uuid if rec.env is not None and rec.env.gpu is not None else None


def input_mismatch(rec: Record, cell: Cell, gpu: str | None = None) -> str | None:
    """Why ``rec`` was not made with ``cell``'s inputs (None when it was), so a resumed run never returns a record
    measured with others: its ``cell_id`` (which names every measurement input off its default, ``Cell.id``), its
    device and knobs, the commit of the code that made it (when both are known: a record of older code is measured
    again, never mixed into a run of newer code), and, for a record written before the id named them, the inputs it
    recorded as they took effect (batch size, the data policy, the epochs or timed steps of an ok record), and the
    GPU (``gpu``, this run's NVML UUID, when both are known: a spot VM preempted between rounds comes back on another
    GPU, and a cell's repeats, like the comparison, are one GPU's measurement)."""
    w = WORKLOADS.get(cell.workload)
    given = rec.model_fields_set  # a field a record of an older schema lacks is taken as the cell's
    requested = rec.data.requested if rec.data is not None and "requested" in rec.data.model_fields_set else cell.data
    expected: list[tuple[str, Any, Any]] = [
        ("cell_id", rec.cell_id, cell.id), ("device", rec.device, cell.device),
        ("settings_requested", rec.settings_requested if "settings_requested" in given else dict(cell.settings),
         dict(cell.settings)),
        ("data.requested", requested, cell.data)]
    if w is not None:
        expected += scenario_of(w).resume_expected(rec, cell, w)
    made_by, running = rec.env.git_commit if rec.env is not None else None, _this_commit()
    if made_by and running:  # a record measured by other code may have run another method (or a fixed defect)
        expected.append(("env.git_commit", made_by, running))
    if gpu and record_gpu(rec):
        expected.append(("env.gpu.uuid", record_gpu(rec), gpu))
    if cell.profile and (cell.repeat or 1) == 1 and rec.status == "ok" and not profiled(rec):
        expected.append(("profile", rec.profile.reason if rec.profile else None, "a profile (--profile)"))
    wrong = [f"{name} {got!r}, not {want!r}" for name, got, want in expected if got != want]
    return "; ".join(wrong) or None


def profiled(rec: Record) -> bool:
    """Whether ``rec`` holds its profile, or why it has none from the profile itself (a profiler that failed, a
    call too long): a record with none, or one whose process ended during the profile (``profile.UNFINISHED``),
    is run again by a resumed ``--profile`` run."""
    return rec.profile is not None and not (rec.profile.reason or "").startswith(profile.UNFINISHED)


@functools.cache
def _this_commit() -> str | None:
    """The commit of the code running now (``environment.git_commit``), asked once per process."""
    return git_commit()


def on_disk_mismatch(cell: Cell, out_dir: Path, gpu: str | None = None) -> str | None:
    """``input_mismatch`` of the valid record at ``cell``'s path (None when there is none or it matches)."""
    try:
        return input_mismatch(load_record(result_path(out_dir, cell)), cell, gpu)
    except RecordError:
        return None


def existing_status(cell: Cell, out_dir: Path, repeats: int = 1, gpu: str | None = None) -> str | None:
    """Status of a valid record already on disk for ``cell`` (with ``repeats`` repeats, on ``gpu``), else None."""
    rec = existing_record(cell, out_dir, repeats, gpu)
    return None if rec is None else rec.status


#: Where a repeat measured on another GPU is kept when it is run again on this run's GPU (under ``repeats/``, so
#: the collector never reads it as a cell).
OTHER_GPU_DIR = "other-gpu"


def set_aside_other_gpu(rcell: Cell, out_dir: Path, gpu: str | None) -> str | None:
    """When the valid record at ``rcell``'s path was measured on a GPU other than ``gpu``, move it (never delete:
    nothing measured is lost) to ``<stack>/repeats/other-gpu/<name>.<its uuid>.json`` and return the note the rerun
    records; else None."""
    path = result_path(out_dir, rcell)
    try:
        old = record_gpu(load_record(path))
    except RecordError:
        return None
    if not gpu or not old or old == gpu:
        return None
    kept = Path(out_dir) / rcell.stack / REPEATS_DIR / OTHER_GPU_DIR / f"{path.stem}.{old}.json"
    kept.parent.mkdir(parents=True, exist_ok=True)
    path.replace(kept)
    return (f"{OTHER_GPU_NOTE} repeat {rcell.repeat or 1} was measured on GPU {old} and run again on this run's GPU "
            f"{gpu} (a spot VM preempted and resumed, or another host), so the cell is one GPU's measurement; the "
            f"earlier record is kept as {kept.relative_to(Path(out_dir))}")


#: How a rerun's note starts (``bench.results.repeats.aggregate`` carries it from every repeat into the cell).
OTHER_GPU_NOTE = "GPU changed:"


def reuse_or_run(rcell: Cell, out_dir: Path, force: bool, cooldown: Cooldown | None,
                 gpu: str | None = None) -> Record:
    """Repeat ``rcell``'s final record already on disk (ok/unsupported, measured on this run's GPU ``gpu``; unless
    ``force``), else a new run; a record from another GPU is set aside first (``set_aside_other_gpu``) and the
    new record notes it."""
    done = None if force else existing_record(rcell, out_dir, gpu=gpu)
    if done and done.status in FINAL_STATUSES:
        return done
    moved = set_aside_other_gpu(rcell, out_dir, gpu)
    rec = run_one(rcell, out_dir, cooldown)
    if moved:
        rec.notes = [*rec.notes, moved]
        write_record(result_path(out_dir, rcell), rec)
    return rec


def run_repeated(cell: Cell, out_dir: Path, repeats: int, force: bool = False,
                 cooldown: Cooldown | None = None, gpu: str | None = None) -> Record:
    """Run ``repeats`` independent processes of ``cell`` (reusing finished repeats unless ``force``),
    then write and return the aggregated record (see ``bench.results.repeats``)."""
    records = [reuse_or_run(replace(cell, repeat=k), out_dir, force, cooldown, gpu) for k in range(1, repeats + 1)]
    rec = aggregate(records)
    write_record(result_path(out_dir, cell), rec)
    return rec


def run_round(cell: Cell, out_dir: Path, repeats: int, round_: int, schedule: dict[str, Any],
              force: bool = False, cooldown: Cooldown | None = None, gpu: str | None = None) -> Record:
    """Run repeat ``round_`` of ``cell`` (``bench.core.rounds``; reused when already final on this run's GPU
    ``gpu`` unless ``force``). Once all ``repeats`` repeats are on disk from this GPU, write and return the aggregated
    record; before that (an earlier round ran on another GPU: it is run again when that round resumes), return this
    repeat's record."""
    rec = reuse_or_run(replace(cell, repeat=round_, schedule=schedule), out_dir, force, cooldown, gpu)
    found = [existing_record(replace(cell, repeat=k), out_dir, gpu=gpu) for k in range(1, repeats + 1)]
    records = [r for r in found if r is not None]
    if len(records) < repeats:
        return rec
    agg = aggregate(records)
    write_record(result_path(out_dir, cell), agg)
    return agg


def run_cells(cells: list[Cell], out_dir: Path, force: bool = False, repeats: int = 1,
              echo: Callable[[str], None] = print, round_: int | None = None,
              schedules: dict[str, dict[str, Any]] | None = None, cooldown: Cooldown | None = None,
              gpu: str | None = None) -> list[Outcome]:
    """Run every cell not already done (status ok/unsupported) unless ``force``; never stops early, except on
    SIGTERM or SIGINT (``bench.core.interrupt.Interrupted``, once the running cell's record is written).

    With ``repeats`` > 1 each cell runs that many times, each in its own process, and its record is
    the aggregate (``bench.results.repeats.RULE``). A single run still carries a one-value ``repeats`` block.
    ``round_``: run only that repeat of each cell (``make bench-all``'s rounds, ``run_round``), with
    ``schedules[stack]`` as its record's ``schedule``. ``cooldown``: wait before each GPU cell
    (``bench.run.gpu_state.Cooldown``). ``gpu``: this run's GPU (NVML UUID, ``gpu_state.gpu_uuid``, read once per
    ``bench run``): a record or repeat measured on another GPU is never reused but run again here
    (``set_aside_other_gpu`` keeps the old file and the new record notes it).
    """
    outcomes = []
    for i, cell in enumerate(cells, 1):
        head = (f"[{i}/{len(cells)}] {cell.stack} {cell.workload} {cell.task} {cell.variant} "
                f"({cell.size}, {cell.device})")
        done = existing_status(cell, out_dir, repeats, gpu)
        if done in FINAL_STATUSES and not force:
            echo(f"{head}: already {done}, skipped (use --force to run again)")
            outcomes.append(Outcome(cell, done, skipped=True))
            continue
        stale = on_disk_mismatch(cell, out_dir, gpu)
        if stale and not force:
            echo(f"{head}: the record on disk was made with other inputs or code ({stale}); running it again")
        if round_ is not None:
            rec = run_round(cell, out_dir, repeats, round_, (schedules or {})[cell.stack], force, cooldown,
                            gpu)
            if rec.repeat is not None:
                head += f" round {round_}/{repeats}"
        elif repeats > 1:
            rec = run_repeated(cell, out_dir, repeats, force, cooldown, gpu)
        else:
            rec = aggregate([reuse_or_run(cell, out_dir, True, cooldown, gpu)])
            write_record(result_path(out_dir, cell), rec)
        echo(f"{head}: {describe(rec)}")
        outcomes.append(Outcome(cell, rec.status, record=rec))
        interrupt.check()  # SIGTERM/SIGINT during this cell: its record is written, stop here
    return outcomes


def describe(rec: Record) -> str:
    """One-line summary of a record for the console."""
    if rec.status != "ok":
        return f"{rec.status.upper()}: {rec.reason}"
    m = rec.metrics
    ms, p90 = m.ms_per_step_mean, m.ms_per_step_p90
    ms_text = "n/a" if ms is None else f"{ms:.2f} ms/step" + (f" (p90 {p90:.2f})" if p90 is not None else "")
    reps = rec.repeats
    if reps is not None and (reps.n or 1) > 1:
        cv = (reps.extra.get("ms_per_step_mean") or {}).get("cv")
        ms_text += f", median of {reps.n} repeats" + (f" (cv {100 * cv:.1f} %)" if cv is not None else "")
    energy = m.j_per_epoch
    energy_text = f", {energy:.1f} J/epoch" if energy is not None else ""
    if m.mfu is not None:
        energy_text += f", MFU {100 * m.mfu:.1f} %"
    wall = rec.process.wall_s if rec.process is not None else None
    first = (f"first step {m.first_step_s:.1f} s" if "first_epoch_s" not in m.model_fields_set
             else f"first epoch {m.first_epoch_s:.1f} s")
    return (f"ok  {ms_text}, {first}{energy_text}"
            + (f", process {wall:.1f} s" if wall is not None else "") + f", data={rec.data.source}")

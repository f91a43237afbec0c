"""Runs cells one by one, each in its own process with a time limit; never imports a framework.

For each cell: the worker writes its record to a scratch file; the runner adds what only the parent
sees (exit status, wall time, peak RSS from ``wait4``, the CUDA JIT cache's growth over the whole
process) and writes ``<stack>/<cell_id>.json`` atomically. A worker that dies without a record (killed,
out of memory, time limit) still gets one (``bench.run.cellprocess``). On SIGTERM or SIGINT (``bench.core.interrupt``)
the running cell's process group is killed, its record is written (``timeout``, "interrupted by SIGTERM (...)") and
no other cell starts: ``Interrupted`` ends the run, every record already written kept.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.core import interrupt
from bench.core.atomic import remove_empty
from bench.core.stacks import get_stack
from bench.instruments import gpu_state, hostload, profile
from bench.instruments.environment import cuda_cache_block, cuda_cache_bytes, utc_now
from bench.instruments.gpu_state import Cooldown
from bench.results.cell import Cell
from bench.results.record import FINAL_STATUSES
from bench.results.repeats import aggregate
from bench.results.schema import CudaCache, EffectiveSettings, Env, Memory, Process, Record
from bench.run.cellenv import cell_env, compile_cache_setting, compile_caches
from bench.run.cellprocess import wait_for_worker, worker_record
from bench.run.runfolder import RunFolder, repeats_n

logger = logging.getLogger(__name__)

WORKER = [sys.executable, "-m", "bench.run.worker"]


#: The cache fills with whatever PTX the driver compiles: a wheel's PTX for a GPU newer than its machine code, and
#: PTX generated at run time (torch's NVRTC kernels where it does not build a cubin for this GPU, cuDNN's
#: runtime-fused kernels), so its growth does not say which.
PTX_JIT_NOTE = ("the CUDA JIT cache grew during this cell: the driver JIT-compiled code during the cell (PTX for a "
                "GPU newer than a wheel's machine code, or runtime-compiled kernels): its compile time may be "
                "inside the first epoch/step (later cells reuse the cache)")


def add_cuda_cache(rec: Record, env: Mapping[str, str], bytes_before: int | None, exited: bool = True) -> None:
    """Put ``env.cuda_cache`` (``bench.instruments.environment.cuda_cache_block``: the CUDA JIT cache's growth since
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


def before_cell(cell: Cell, cooldown: Cooldown | None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """GPU cells: the record's ``cooldown`` block (with a ``cooldown``, taken after the wait; else None) and its
    ``gpu_before`` (other processes on the GPU, temperature). (None, None) on CPU."""
    if cell.device != "gpu":
        return None, None
    waited = cooldown.wait() if cooldown is not None else None
    return waited, gpu_state.snapshot()


def add_host_load(rec: Record, wall_s: float, own_cpu_s: float, busy: tuple[float | None, float | None]) -> None:
    """``rec.process``'s CPU times (``cpu_s``, ``other_cpu_s``, ``host_contended``: ``bench.instruments.hostload``)
    from the process's own CPU time and the host's busy CPU time read before it started and after it ended
    (``busy``), and a note when the host was contended."""
    if rec.process is None:
        return
    other = hostload.other_cpu_s(*busy, own_cpu_s)
    cpus = (rec.env.cpu_count if rec.env is not None else None) or os.cpu_count()  # the worker's host is this one
    rec.process.cpu_s, rec.process.other_cpu_s = own_cpu_s, other
    rec.process.host_contended = hostload.contended(other, wall_s, cpus)
    if rec.process.host_contended and other is not None:
        rec.notes = [*rec.notes, hostload.contention_note(other, wall_s, cpus)]


def run_one(cell: Cell, out_dir: Path | RunFolder, cooldown: Cooldown | None = None) -> Record:
    """Run ``cell`` in a child process, fill its typed ``Record`` (the worker's, read back) with what only the parent
    sees and write it once; returns the record. On a GPU, first
    the optional ``cooldown`` and the check for other processes on the GPU (``bench.instruments.gpu_state``). The
    process gets fresh torch.compile caches (``compile_caches``); the CUDA JIT cache is measured before it starts and
    after it has ended (``add_cuda_cache``)."""
    interrupt.check()  # a signal held back while the previous cell's record was written: start no other
    folder = out_dir if isinstance(out_dir, RunFolder) else RunFolder(out_dir)
    out_dir = folder.root
    stack = get_stack(cell.stack)
    waited, gpu_before = before_cell(cell, cooldown)
    final = folder.path(cell)
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
            args = [*WORKER, str(cell_file), str(worker_out), *samples]
            busy_before, started_utc, start = hostload.busy_cpu_s(), utc_now(), time.perf_counter()
            rc, usage, timed_out, signum = wait_for_worker(args, env, log_file, cell.timeout_s)
            wall, busy_after = time.perf_counter() - start, hostload.busy_cpu_s()

        rec = worker_record(cell, worker_out, rc, timed_out, log_file, (signum, wall), env, started_utc)
        profile.place(rec, work, final, out_dir)
        profile.discard(work, cell.run_id)
        # GPU-seconds: the GPU is the cell's for its whole process (cost accounting, docs/cloud.md)
        rec.process = Process(exit_code=rc, wall_s=wall, timeout_s=cell.timeout_s,
                              max_rss_bytes=usage.ru_maxrss * 1024, log=log_file.name,
                              gpu_s=wall if cell.device == "gpu" else 0.0)
        add_host_load(rec, wall, usage.ru_utime + usage.ru_stime, (busy_before, busy_after))
        rec.memory = rec.memory or Memory()
        if "host_peak_rss_bytes" not in rec.memory.model_fields_set:  # the worker's own reading comes first
            rec.memory.host_peak_rss_bytes = usage.ru_maxrss * 1024
        if waited is not None:
            rec.cooldown = waited
        if gpu_before is not None:
            rec.gpu_before = gpu_before
        add_cuda_cache(rec, env, cuda_cache_before, exited=rc == 0)
        if caches:
            rec.settings = rec.settings or EffectiveSettings()
            rec.settings.compile_cache = compile_cache_setting(env)
        note = gpu_state.busy_note(gpu_before or {})
        if note:
            rec.notes = [*rec.notes, note]
        folder.write(cell, rec)
        worker_out.unlink(missing_ok=True)
        cell_file.unlink(missing_ok=True)
        # the scratch folder, not left empty beside the records (the next cell makes it again); anything left keeps it
        remove_empty([work])
        return rec


def reuse_or_run(rcell: Cell, folder: RunFolder, force: bool, cooldown: Cooldown | None,
                 gpu: str | None = None) -> Record:
    """Repeat ``rcell``'s final record already on disk (ok/unsupported, measured on this run's GPU ``gpu``; unless
    ``force``), else a new run; a record from another GPU is set aside first (``RunFolder.set_aside_other_gpu``) and
    the new record notes it; any other record it replaces is set aside with why (``RunFolder.set_aside``), and so
    is, for a repeat, its cell's record (the aggregate of the earlier repeats: stale from now until this run writes
    it again)."""
    done = None if force else folder.existing(rcell, gpu=gpu)
    if done and done.status in FINAL_STATUSES:
        return done
    moved = folder.set_aside_other_gpu(rcell, gpu)
    if not moved:
        folder.set_aside(rcell, replaced_because(folder, rcell, force, gpu))
    if rcell.repeat is not None:
        folder.set_aside(rcell.replace(repeat=None), f"the cell's record, aggregated from earlier repeats, while "
                         f"repeat {rcell.repeat} runs again")
    rec = run_one(rcell, folder, cooldown)
    if moved:
        rec.notes = [*rec.notes, moved]
        folder.write(rcell, rec)
    return rec


def replaced_because(folder: RunFolder, rcell: Cell, force: bool, gpu: str | None) -> str:
    """Why the record at ``rcell``'s path is run again (``RunFolder.set_aside``'s line): made with other inputs, code,
    software or driver (``RunFolder.mismatch``), ``--force``, or a status that is not final (a failure is retried)."""
    rec, stale = folder.load(rcell), folder.mismatch(rcell, gpu)
    if stale:
        return f"made with other inputs, code, software or GPU driver: {stale}"
    if force:
        return "--force: run again"
    if rec is None:
        return "not a valid record (bench.results.record.load_record refused it)"
    if rec.status not in FINAL_STATUSES:
        return f"status {rec.status}: a cell that did not finish is run again"
    return f"a record of {repeats_n(rec)} repeat(s), not 1"


def run_repeated(cell: Cell, folder: RunFolder, repeats: int, force: bool = False,
                 cooldown: Cooldown | None = None, gpu: str | None = None) -> Record:
    """Run ``repeats`` independent processes of ``cell`` (reusing finished repeats unless ``force``),
    then write and return the aggregated record (see ``bench.results.repeats``)."""
    records = [reuse_or_run(cell.replace(repeat=k), folder, force, cooldown, gpu) for k in range(1, repeats + 1)]
    rec = aggregate(records)
    folder.write(cell, rec)
    return rec


def run_round(cell: Cell, folder: RunFolder, repeats: int, round_: int, schedule: dict[str, Any],
              force: bool = False, cooldown: Cooldown | None = None, gpu: str | None = None) -> Record:
    """Run repeat ``round_`` of ``cell`` (``bench.core.rounds``; reused when already final on this run's GPU
    ``gpu`` unless ``force``). Once all ``repeats`` repeats are on disk from this GPU, write and return the aggregated
    record; before that (an earlier round ran on another GPU: it is run again when that round resumes), return this
    repeat's record."""
    rec = reuse_or_run(cell.replace(repeat=round_, schedule=schedule), folder, force, cooldown, gpu)
    found = [folder.existing(cell.replace(repeat=k), gpu=gpu) for k in range(1, repeats + 1)]
    records = [r for r in found if r is not None]
    if len(records) < repeats:
        return rec
    agg = aggregate(records)
    folder.write(cell, agg)
    return agg


def run_cells(cells: list[Cell], out_dir: Path, force: bool = False, repeats: int = 1, round_: int | None = None,
              schedules: dict[str, dict[str, Any]] | None = None, cooldown: Cooldown | None = None,
              gpu: str | None = None) -> list[Outcome]:
    """Run every cell not already done (status ok/unsupported) unless ``force``; never stops early, except on
    SIGTERM or SIGINT (``bench.core.interrupt.Interrupted``, once the running cell's record is written). Each cell's
    line (skipped, run again, its outcome: ``describe``) is logged (INFO).

    With ``repeats`` > 1 each cell runs that many times, each in its own process, and its record is
    the aggregate (``bench.results.repeats.RULE``). A single run still carries a one-value ``repeats`` block.
    ``round_``: run only that repeat of each cell (``make bench-all``'s rounds, ``run_round``), with
    ``schedules[stack]`` as its record's ``schedule``. ``cooldown``: wait before each GPU cell
    (``bench.instruments.gpu_state.Cooldown``). ``gpu``: this run's GPU (NVML UUID, ``gpu_state.gpu_uuid``, read once
    per ``bench run``): a record or repeat measured on another GPU is never reused but run again here
    (``RunFolder.set_aside_other_gpu`` keeps the old file and the new record notes it).
    """
    outcomes = []
    folder = RunFolder(out_dir)
    for i, cell in enumerate(cells, 1):
        head = (f"[{i}/{len(cells)}] {cell.stack} {cell.workload} {cell.task} {cell.variant} "
                f"({cell.size}, {cell.device})")
        found = folder.existing(cell, repeats, gpu)
        done = None if found is None else found.status
        if done in FINAL_STATUSES and not force:
            logger.info(f"{head}: already {done}, skipped (use --force to run again)")
            outcomes.append(Outcome(cell, done, skipped=True))
            continue
        stale = folder.mismatch(cell, gpu)
        if stale and not force:
            logger.info(f"{head}: the record on disk was made with other inputs, code, software or GPU driver "
                        f"({stale}); running it again")
        if round_ is not None:
            rec = run_round(cell, folder, repeats, round_, (schedules or {})[cell.stack], force, cooldown, gpu)
            if rec.repeat is not None:
                head += f" round {round_}/{repeats}"
        elif repeats > 1:
            rec = run_repeated(cell, folder, repeats, force, cooldown, gpu)
        else:
            rec = aggregate([reuse_or_run(cell, folder, force, cooldown, gpu)])
            folder.write(cell, rec)
        logger.info(f"{head}: {describe(rec)}")
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
        spread = reps.spread("ms_per_step_mean")
        cv = spread.cv if spread is not None else None
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

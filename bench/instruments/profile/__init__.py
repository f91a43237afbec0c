"""Where the time goes: a cell's profile (``bench run --profile``), taken after its timed measurement and apart
from it, with the framework's own profiler.

The engine trains (or steps) and times the cell as always; its telemetry window closes after its last barrier and
its metrics are computed before it returns. Then, when the cell asks for a profile, the worker runs the steps the
engine handed back (``rerun.ProfileRun``: the same model, optimizer state, data and step) under the framework's
profiler (``window.profiler_for``): ``rerun.WARMUP`` warm-up steps (the profiler already running, so that its
start-up costs fall on them, outside the summarised window), then ``STEPS`` steps inside the window
(``window.Window``: a barrier at each edge). The trace goes to the worker's scratch folder
(``<run_id>.trace.json.gz``, a Chrome trace; the XPlane profilers' TensorBoard directory too), which the runner
moves beside the record once the worker has ended (``place``), and ``summary.summarise`` turns it into the record's
``profile`` block, the same categories on every stack (``bench.core.opcategories``). A profile that fails leaves
the cell ``ok`` with its timed numbers, the block saying why (``reason``).

Modules: ``rerun`` (the steps), ``window`` (the window, the profiler lookup), ``torch_profiler``,
``jax_profiler``, ``tensorflow_profiler`` (one per framework), ``xla`` (what XLA runs otherwise under them),
``xspace`` (reading XSpace and HLO protobufs),
``spans`` (one timeline from either trace format; the Chrome trace written), ``summary`` (the block).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench.instruments.profile.rerun import WARMUP, KerasCall, ProfileRun
from bench.instruments.profile.spans import TENSORBOARD, TRACE
from bench.instruments.profile.summary import summarise
from bench.instruments.profile.window import Window, profiler_for
from bench.instruments.timing import clock
from bench.results.schema import Record

__all__ = ["MAX_STEPS", "MAX_TRACE_BYTES", "SCRATCH", "STEPS", "TENSORBOARD", "TRACE", "UNFINISHED", "WARMUP",
           "ProfileRun", "bounded", "capture", "discard", "none_note", "place", "relate"]

#: Steps inside the profiled window: a few steady steps, enough to see every op of a step several times while the
#: trace stays small (a smoke cell's trace is tens to hundreds of kB).
STEPS = 5
#: The ``profile.reason`` of the record a cell's worker writes before its profile starts (``bench.run.worker``): that
#: record stands if the process ends during the profile, and the runner adds how it ended
#: (``bench.run.cellprocess.cut_profile``).
UNFINISHED = ("the cell's process ended during the profile, after its timed record was written (the timed numbers "
              "stand)")
#: The profiler's raw output while it is read, ``<run_id>`` + this + a random part, in the worker's scratch folder.
SCRATCH = ".profiling-"
#: The most steps a window holds whatever a caller asks (a GPU step's trace grows with its kernels times the steps).
MAX_STEPS = 10
#: The largest trace kept (its Chrome trace and TensorBoard directory together, bytes): a larger one is deleted, the
#: summary kept and ``warnings`` saying so, rather than filling the disk.
MAX_TRACE_BYTES = 256 * 1024 * 1024


def capture(run: ProfileRun, backend: str, device: str, base: Path, barrier: Any,
            steps: int = STEPS, xla: bool | None = None) -> dict[str, Any]:
    """Profile ``steps`` steps (at most ``MAX_STEPS``) of ``run`` with framework ``backend``'s profiler on
    ``device`` and return the ``profile`` block (``bench.results.schema.Profile``); its files are ``base`` +
    ``.trace.json.gz`` (and ``.tensorboard``). The profiler starts before the warm-up steps (``Window.arm``), after a
    Keras call has made its data (``KerasCall.prepare``).
    ``barrier``: the framework's device barrier. ``xla``: whether the cell's step ran XLA as its record says
    (``xla.tf_compiled``; None: unknown): False drops the profiler's ``execution_differs``, which only XLA's
    command buffers cause. Never raises for a profile that fails: the block then holds
    ``reason``, with the files and the profiler's warnings when it got that far."""
    start = clock()
    base.parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=base.name + SCRATCH, dir=base.parent))  # discard's, if killed
    window: Window | None = None
    files: dict[str, Any] = {}
    setup: dict[str, Any] = {"steps_cap": MAX_STEPS, "trace_limit_bytes": MAX_TRACE_BYTES}
    try:
        profiler = profiler_for(backend, device, workdir)
        setup["execution_differs"] = None if xla is False else getattr(profiler, "execution_differs", None)
        steps = min(steps, MAX_STEPS)
        if isinstance(run, KerasCall):  # its data made, on the device too, before the profiler starts
            run.prepare(steps)
            barrier()
        window = Window(profiler, barrier)
        window.arm()
        held = run(window, steps)
        if not window.stopped:
            raise RuntimeError(f"the steps ended before the profile window closed (it held {held.steps} steps after "
                               f"{held.warmup}): the profiled call ran out of the cell's data, as a Keras call of "
                               "whole executions does when 3 executions (warm-up, window, one more) of "
                               "steps_per_execution steps exceed an epoch's batches")
        spans, files = profiler.collect(base)
        files = bounded(files, base.parent)
        block = summarise(spans, held.steps)
        if device == "gpu":
            _check_gpu_window(block)
        block.update(profiler=profiler.name, activities=profiler.activities, warmup_steps=held.warmup,
                     wall_ms=1000.0 * (window.wall_s or 0.0), **setup, **files)
    except Exception as e:  # the timed numbers stand; the profile says why it is missing
        if window is not None:
            with contextlib.suppress(Exception):
                window.abandon()
        block = {**setup, **files, "reason": f"{type(e).__name__}: {e}".splitlines()[0][:500]}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    block["cost_s"] = clock() - start
    return block


def bounded(files: dict[str, Any], folder: Path, limit: int | None = None) -> dict[str, Any]:
    """``files`` (a profiler's ``collect``: names in ``folder`` and their sizes) with the trace and TensorBoard
    directory deleted and named null when together they exceed ``limit`` bytes (``MAX_TRACE_BYTES``), their sizes
    kept and ``warnings`` saying so."""
    limit = MAX_TRACE_BYTES if limit is None else limit
    size = int(files.get("trace_bytes") or 0) + int(files.get("tensorboard_bytes") or 0)
    if size <= limit:
        return files
    for key in ("trace", "tensorboard"):
        if files.get(key):
            path = folder / files[key]
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
    note = f"trace not kept: {size} bytes over the limit of {limit} bytes"
    return {**files, "trace": None, "tensorboard": None, "warnings": [*(files.get("warnings") or []), note]}


def relate(block: dict[str, Any], timed_p50_ms: float | None) -> dict[str, Any]:
    """``block`` with the profiled window's ms per step (``wall_ms / steps``) and ``slowdown``: that over the
    cell's timed p50 ms per step (``metrics.ms_per_step_p50``); null where either is missing."""
    wall, steps = block.get("wall_ms"), block.get("steps")
    per = wall / steps if wall and steps else None
    slow = per / timed_p50_ms if per is not None and timed_p50_ms else None
    return {**block, "ms_per_step": per, "slowdown": slow}


def _check_gpu_window(block: dict[str, Any]) -> None:
    """Raise ValueError when a GPU cell's summarised window (``summarise``'s block) holds no device work: none in the
    whole trace (CUPTI unavailable, or the steps ran elsewhere), or none inside the window though some before it
    (what a full activity buffer leaves: the warm-up's kernels), where busy and host shares would read 0 and 1."""
    if block["device"] != "gpu":
        raise ValueError("no device activity: the profiler recorded no kernel, copy or memset on the GPU "
                         "(CUPTI unavailable, or the steps ran elsewhere)")
    if block["busy_ms"] <= 0:
        raise ValueError("no device activity inside the profiled window, though the trace holds some before it "
                         "(the profiler's activity buffer filled, or its records were lost): busy and host shares "
                         "would read 0 and 1, not measured")


def none_note(reason: str) -> str:
    """The record's note for a cell without a profile: ``profile: none (<reason>)``."""
    return f"profile: none ({reason})"


def discard(work: Path, run_id: str) -> None:
    """Delete what a cell's profile left in the worker's scratch folder ``work`` once ``place`` moved what its
    record names: the profiler's raw output (``<run_id>`` + ``SCRATCH``) and a trace a killed process never
    summarised (its record's profile names none; it may be cut short)."""
    for path in work.glob(f"{run_id}.*"):
        if path.name.startswith(run_id + SCRATCH) or path.name in (run_id + TRACE, run_id + TENSORBOARD):
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)


def place(rec: Record, work: Path, final: Path, out_dir: Path) -> None:
    """Move a profile's files (``profile.trace``, ``profile.tensorboard``: names in the worker's scratch folder
    ``work``) beside the record at ``final``, their paths in the block then relative to the run directory
    ``out_dir`` (``pytorch/<cell_id>.trace.json.gz``; a repeat's under ``repeats/``), so that the cell's record,
    which takes repeat 1's block, points at them too. A file the worker did not leave is named null."""
    block = rec.profile
    if block is None:
        return
    for key in ("trace", "tensorboard"):
        name = getattr(block, key)
        if not name:
            continue
        src, dst = work / name, final.parent / name
        if not src.exists():
            setattr(block, key, None)
            continue
        if dst.is_dir():
            shutil.rmtree(dst)
        shutil.move(str(src), str(dst))
        setattr(block, key, dst.relative_to(out_dir).as_posix())

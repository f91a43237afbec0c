"""Runs cells one by one, each in its own process with a time limit; never imports a framework.

For each cell: the worker writes its record to a scratch file; the runner adds what only the parent
sees (exit status, wall time, peak RSS from ``wait4``, the CUDA JIT cache's growth over the whole
process) and writes ``<stack>/<cell_id>.json`` atomically. A worker that dies without a record (killed,
out of memory, time limit) still gets one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench import gpu_state
from bench.environment import cuda_cache_block, cuda_cache_bytes
from bench.gpu_state import Cooldown
from bench.knobs import tf32_override
from bench.record import (
    FINAL_STATUSES,
    Cell,
    RecordError,
    new_record,
    read_record,
    result_path,
    write_json_atomic,
)
from bench.repeats import aggregate
from bench.stacks import Stack, get_stack

WORKER = [sys.executable, "-m", "bench.worker"]


def cell_env(stack: Stack, device: str, settings: dict[str, Any] | None = None) -> dict[str, str]:
    """Environment of a cell's process: the stack's variables, and no visible GPU on a CPU run.

    ``NVIDIA_TF32_OVERRIDE``: ``0`` for a cell whose ``settings`` say ``tf32: off`` (strict FP32), otherwise absent,
    whatever the caller's environment held, so each framework's own TF32 switch decides, as the sources ran
    (``knobs.tf32_override``; the worker records the value its process had).
    """
    env = {**os.environ, **stack.env, "PYTHONUNBUFFERED": "1"}
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    override = tf32_override(settings or {})
    if override is None:
        env.pop("NVIDIA_TF32_OVERRIDE", None)
    else:
        env["NVIDIA_TF32_OVERRIDE"] = override
    return env


#: torch 2.13's switches for inductor's caches (torch/_inductor/config.py, torch/_functorch/config.py@v2.13.0); a
#: cell's ``settings.compile_cache`` names those its environment sets, since they change what the cache does.
INDUCTOR_CACHE_SWITCHES = ("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "TORCHINDUCTOR_FX_GRAPH_CACHE",
                           "TORCHINDUCTOR_AUTOGRAD_CACHE", "TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE",
                           "TORCHINDUCTOR_AUTOTUNE_REMOTE_CACHE", "TORCHINDUCTOR_BUNDLED_AUTOTUNE_REMOTE_CACHE")


@contextlib.contextmanager
def compile_caches(stack: Stack) -> Iterator[dict[str, str]]:
    """Fresh, empty torch.compile caches for one cell process of a PyTorch-backend stack: yields the
    environment that points them into a new directory, and removes it once the block ends. Empty for the
    other backends, which keep no compile cache on disk unless asked (JAX 0.10.2: ``jax_compilation_cache_dir``,
    None by default, jax/_src/config.py; TensorFlow 2.21's XLA: ``--tf_xla_persistent_cache_directory``).

    Inductor keeps its FX-graph, AOTAutograd and autotuning caches under ``TORCHINDUCTOR_CACHE_DIR``, by
    default ``/tmp/torchinductor_<user>`` (torch/_inductor/runtime/cache_dir_utils.py@v2.13.0), and Triton's
    kernels under ``TRITON_CACHE_DIR`` (else inside it), all on by default: the cells of one container would
    otherwise compile warm after the first cell with the same graph. The directory is made where inductor's
    default is (the system temporary directory), so reads and writes cost what they cost out of the box.
    Keras' ``jit_compile`` on the PyTorch backend is torch.compile, so the same caches. The caller's own
    ``TORCHINDUCTOR_CACHE_DIR`` / ``TRITON_CACHE_DIR`` are overridden.
    """
    if stack.backend != "torch":
        yield {}
        return
    root = Path(tempfile.mkdtemp(prefix="bench-compile-cache-"))
    try:
        yield {"TORCHINDUCTOR_CACHE_DIR": str(root / "torchinductor"), "TRITON_CACHE_DIR": str(root / "triton")}
    finally:
        shutil.rmtree(root, ignore_errors=True)  # a compile worker still exiting may write into it meanwhile


def compile_cache_setting(env: Mapping[str, str]) -> str:
    """The record's ``settings.compile_cache`` for a cell run with ``env`` (``compile_caches``): "fresh per
    cell", plus every inductor cache switch (``INDUCTOR_CACHE_SWITCHES``) the environment sets, e.g.
    "fresh per cell (TORCHINDUCTOR_FX_GRAPH_CACHE=0)"."""
    switches = [f"{k}={env[k]}" for k in INDUCTOR_CACHE_SWITCHES if k in env]
    return "fresh per cell" + (f" ({', '.join(switches)})" if switches else "")


PTX_JIT_NOTE = ("the CUDA JIT cache grew during this cell: its first step/epoch includes the driver compiling PTX "
                "for this GPU (later cells reuse the cache)")


def add_cuda_cache(rec: dict[str, Any], env: Mapping[str, str], bytes_before: int | None) -> None:
    """Put ``env.cuda_cache`` (``bench.environment.cuda_cache_block``: the CUDA JIT cache's growth since
    ``bytes_before``, bytes) into ``rec``, and ``PTX_JIT_NOTE`` when it grew. Called once the worker process
    has ended: the driver writes the cache as the process's CUDA context is torn down, after the worker's
    own record is on disk."""
    block = cuda_cache_block(bytes_before, env)
    rec.setdefault("env", {})["cuda_cache"] = block
    if block["jit_compiled"]:
        rec.setdefault("notes", []).append(PTX_JIT_NOTE)


#: The probe: import the framework, list its GPUs (keeping its warnings: torch reports an old driver as a
#: warning and zero devices), and run one matmul on the first, so driver or PTX problems show here.
PROBE_CODE = """\
import json, warnings
from bench.engines import frameworks
frameworks.import_backend({backend!r})
print("IMPORTED", flush=True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    gpus = frameworks.gpu_devices({backend!r})
    if gpus:
        frameworks.gpu_matmul({backend!r})
print("PROBE" + json.dumps({{"gpus": gpus, "warnings": [str(w.message) for w in caught]}}))
"""

#: How CUDA, the frameworks and the driver say that the driver is older than the CUDA in the image.
DRIVER_TOO_OLD = re.compile(r"driver.{0,40}(too old|insufficient)|insufficient.{0,20}driver|"
                            r"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH|cudaErrorInsufficientDriver", re.IGNORECASE)


def gpu_failure(stack: Stack, text: str) -> str:
    """One line for a framework that imports but cannot use the GPU; names the driver the image needs
    when ``text`` says the driver is too old (``Stack.gpu_cuda``, ``Stack.min_driver``)."""
    msg = f"the {stack.backend} framework of stack {stack.id} cannot use the GPU: {text}"
    if DRIVER_TOO_OLD.search(text):
        msg += (f" -- this image bundles CUDA {stack.gpu_cuda}, which needs NVIDIA driver R{stack.min_driver} or "
                "newer: update the driver (README, 'Drivers')")
    return msg


def probe_gpus(stack: Stack, timeout_s: float = 300.0) -> list[str]:
    """GPUs the stack's framework sees and can run a matmul on, asked of a separate process (the runner
    imports none). Empty when it sees none.

    Raises:
        RuntimeError: the framework cannot be imported, or it imports but fails on the GPU or reports a
            driver too old for the image's CUDA (``gpu_failure``).
    """
    p = subprocess.run([sys.executable, "-c", PROBE_CODE.format(backend=stack.backend)],
                       env=cell_env(stack, "gpu"), capture_output=True, text=True, timeout=timeout_s)
    for line in p.stdout.splitlines():
        if line.startswith("PROBE"):
            found = json.loads(line[5:])
            old = [w for w in found["warnings"] if DRIVER_TOO_OLD.search(w)]
            if not found["gpus"] and old:
                raise RuntimeError(gpu_failure(stack, old[0].splitlines()[0]))
            return found["gpus"]
    tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
    if "IMPORTED" not in p.stdout:
        raise RuntimeError(f"cannot import the {stack.backend} framework of stack {stack.id}: {tail}")
    raise RuntimeError(gpu_failure(stack, tail))


@dataclass
class Outcome:
    """What happened to one cell in this invocation (``skipped`` = already done earlier)."""

    cell: Cell
    status: str
    skipped: bool = False
    record: dict[str, Any] = field(default_factory=dict)


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])[-600:]


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


def run_one(cell: Cell, out_dir: Path, cooldown: Cooldown | None = None) -> dict[str, Any]:
    """Run ``cell`` in a child process and write its final record; returns the record. On a GPU, first
    the optional ``cooldown`` and the check for other processes on the GPU (``bench.gpu_state``). The process
    gets fresh torch.compile caches (``compile_caches``); the CUDA JIT cache is measured before it starts and
    after it has ended (``add_cuda_cache``)."""
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

    timed_out = threading.Event()
    with compile_caches(stack) as caches:
        env = {**cell_env(stack, cell.device, cell.settings), **caches}
        cuda_cache_before = cuda_cache_bytes(env)
        start = time.perf_counter()
        with open(log_file, "w") as log:
            proc = subprocess.Popen([*WORKER, str(cell_file), str(worker_out), *samples],
                                    stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

            def kill() -> None:
                timed_out.set()
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)

            timer = threading.Timer(cell.timeout_s, kill)
            timer.start()
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            finally:
                timer.cancel()
            proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start

    try:
        rec = read_record(worker_out)
    except RecordError:
        rec = new_record(cell)
        rc = proc.returncode
        if timed_out.is_set():
            rec["status"], rec["reason"] = "timeout", f"exceeded the time limit of {cell.timeout_s:g} s"
        elif rc == -signal.SIGKILL:
            rec["status"] = "oom"
            rec["reason"] = "killed by SIGKILL (most likely the out-of-memory killer)"
        else:
            rec["reason"] = f"worker exited with status {rc} without a record: {_tail(log_file)}"
    # GPU-seconds: the GPU is the cell's for its whole process (cost accounting, README "Run on the cloud")
    rec["process"] = {"exit_code": proc.returncode, "wall_s": wall, "timeout_s": cell.timeout_s,
                      "max_rss_bytes": usage.ru_maxrss * 1024, "log": log_file.name,
                      "gpu_s": wall if cell.device == "gpu" else 0.0}
    rec.setdefault("memory", {}).setdefault("host_peak_rss_bytes", usage.ru_maxrss * 1024)
    rec.update(before)
    add_cuda_cache(rec, env, cuda_cache_before)
    if caches:
        rec.setdefault("settings", {})["compile_cache"] = compile_cache_setting(env)
    note = gpu_state.busy_note(before.get("gpu_before") or {})
    if note:
        rec.setdefault("notes", []).append(note)
    write_json_atomic(final, rec)
    worker_out.unlink(missing_ok=True)
    cell_file.unlink(missing_ok=True)
    return rec


def existing_record(cell: Cell, out_dir: Path, repeats: int = 1) -> dict[str, Any] | None:
    """A valid record already on disk for ``cell`` (aggregated over ``repeats`` repeats), else None."""
    path = result_path(out_dir, cell)
    if not path.exists():
        return None
    try:
        rec = read_record(path)
    except RecordError:
        return None
    if (rec.get("repeats") or {}).get("n", 1) != repeats:
        return None
    return rec


def existing_status(cell: Cell, out_dir: Path, repeats: int = 1) -> str | None:
    """Status of a valid record already on disk for ``cell`` (with ``repeats`` repeats), else None."""
    rec = existing_record(cell, out_dir, repeats)
    return None if rec is None else rec["status"]


def reuse_or_run(rcell: Cell, out_dir: Path, force: bool, cooldown: Cooldown | None) -> dict[str, Any]:
    """Repeat ``rcell``'s final record already on disk (ok/unsupported; unless ``force``), else a new run."""
    done = None if force else existing_record(rcell, out_dir)
    return done if done and done["status"] in FINAL_STATUSES else run_one(rcell, out_dir, cooldown)


def run_repeated(cell: Cell, out_dir: Path, repeats: int, force: bool = False,
                 cooldown: Cooldown | None = None) -> dict[str, Any]:
    """Run ``repeats`` independent processes of ``cell`` (reusing finished repeats unless ``force``),
    then write and return the aggregated record (see ``bench.repeats``)."""
    records = [reuse_or_run(replace(cell, repeat=k), out_dir, force, cooldown) for k in range(1, repeats + 1)]
    rec = aggregate(records)
    write_json_atomic(result_path(out_dir, cell), rec)
    return rec


def run_round(cell: Cell, out_dir: Path, repeats: int, round_: int, schedule: dict[str, Any],
              force: bool = False, cooldown: Cooldown | None = None) -> dict[str, Any]:
    """Run repeat ``round_`` of ``cell`` (``bench.rounds``; reused when already final unless ``force``).
    Once all ``repeats`` repeats are on disk, write and return the aggregated record; before that, return
    this repeat's record."""
    rec = reuse_or_run(replace(cell, repeat=round_, schedule=schedule), out_dir, force, cooldown)
    records = [existing_record(replace(cell, repeat=k), out_dir) for k in range(1, repeats + 1)]
    if any(r is None for r in records):
        return rec
    agg = aggregate(records)  # type: ignore[arg-type]
    write_json_atomic(result_path(out_dir, cell), agg)
    return agg


def run_cells(cells: list[Cell], out_dir: Path, force: bool = False, repeats: int = 1,
              echo: Callable[[str], None] = print, round_: int | None = None,
              schedules: dict[str, dict[str, Any]] | None = None, cooldown: Cooldown | None = None) -> list[Outcome]:
    """Run every cell not already done (status ok/unsupported) unless ``force``; never stops early.

    With ``repeats`` > 1 each cell runs that many times, each in its own process, and its record is
    the aggregate (``bench.repeats.RULE``). A single run still carries a one-value ``repeats`` block.
    ``round_``: run only that repeat of each cell (``make bench-all``'s rounds, ``run_round``), with
    ``schedules[stack]`` as its record's ``schedule``. ``cooldown``: wait before each GPU cell
    (``bench.gpu_state.Cooldown``).
    """
    outcomes = []
    for i, cell in enumerate(cells, 1):
        head = (f"[{i}/{len(cells)}] {cell.stack} {cell.workload} {cell.task} {cell.variant} "
                f"({cell.size}, {cell.device})")
        done = existing_status(cell, out_dir, repeats)
        if done in FINAL_STATUSES and not force:
            echo(f"{head}: already {done}, skipped (use --force to run again)")
            outcomes.append(Outcome(cell, done, skipped=True))
            continue
        if round_ is not None:
            rec = run_round(cell, out_dir, repeats, round_, (schedules or {})[cell.stack], force, cooldown)
            if rec.get("repeat") is not None:
                head += f" round {round_}/{repeats}"
        elif repeats > 1:
            rec = run_repeated(cell, out_dir, repeats, force, cooldown)
        else:
            rec = aggregate([run_one(cell, out_dir, cooldown)])
            write_json_atomic(result_path(out_dir, cell), rec)
        echo(f"{head}: {describe(rec)}")
        outcomes.append(Outcome(cell, rec["status"], record=rec))
    return outcomes


def describe(rec: dict[str, Any]) -> str:
    """One-line summary of a record for the console."""
    if rec["status"] != "ok":
        return f"{rec['status'].upper()}: {rec.get('reason')}"
    m = rec["metrics"]
    ms = m.get("ms_per_step_mean")
    p90 = m.get("ms_per_step_p90")
    ms_text = "n/a" if ms is None else f"{ms:.2f} ms/step" + (f" (p90 {p90:.2f})" if p90 is not None else "")
    reps = rec.get("repeats") or {}
    if reps.get("n", 1) > 1:
        cv = (reps.get("ms_per_step_mean") or {}).get("cv")
        ms_text += f", median of {reps['n']} repeats" + (f" (cv {100 * cv:.1f} %)" if cv is not None else "")
    energy = m.get("j_per_epoch")
    energy_text = f", {energy:.1f} J/epoch" if energy is not None else ""
    if m.get("mfu") is not None:
        energy_text += f", MFU {100 * m['mfu']:.1f} %"
    wall = (rec.get("process") or {}).get("wall_s")
    first = (f"first step {m['first_step_s']:.1f} s" if "first_epoch_s" not in m
             else f"first epoch {m['first_epoch_s']:.1f} s")
    return (f"ok  {ms_text}, {first}{energy_text}"
            + (f", process {wall:.1f} s" if wall is not None else "") + f", data={rec['data'].get('source')}")

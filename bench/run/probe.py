"""The GPU as each stack image's framework sees it: the probe (the framework imports, lists its GPUs and runs a
matmul, ``probe_gpus``) or what ``bench doctor`` recorded of it on this GPU (``recorded_gpus``), the image part of the
preflight (``bench doctor``: that probe and the measured GEMM peak it reaches, ``image_checks``), and that peak
measured before a GPU run where it is missing (``ensure_measured_peak``). The peak itself, its key and its file are
``bench.run.peaks``; the host part of the preflight is ``bench.host.doctor``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.core.atomic import unwritable
from bench.core.checks import Check
from bench.core.errors import InputError
from bench.core.stacks import STACKS, Stack
from bench.run.cellenv import cell_env, gpu_env_problem
from bench.run.peaks import (
    GEMM_MODES,
    GEMM_N,
    cached_tflops,
    current_software,
    measure_gemm,
    nvml_identity,
    peak_writer,
    same_gpu,
    same_software,
)

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
    """GPUs the stack's framework sees and can run a matmul on, asked of a separate process
    (``python -m bench.run.gpucheck probe``: the runner imports no framework). Empty when it sees none.

    Raises:
        RuntimeError: the framework cannot be imported, or it imports but fails on the GPU or reports a
            driver too old for the image's CUDA (``gpu_failure``), or the environment would keep it off the GPU
            (``bench.run.cellenv.gpu_env_problem``).
    """
    env = cell_env(stack, "gpu")
    problem = gpu_env_problem(stack, "gpu", env)
    if problem:
        raise RuntimeError(f"stack {stack.id}: {problem}")
    p = subprocess.run([sys.executable, "-m", "bench.run.gpucheck", "probe", stack.backend],
                       env=env, capture_output=True, text=True, timeout=timeout_s)
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


def recorded_gpus(stack_id: str, results_dir: Path, flavor: str,
                  identify: Callable[[Mapping[str, str]], dict[str, Any]] | None = None
                  ) -> tuple[list[str] | None, str]:
    """The GPU ``bench doctor`` saw this stack's framework use on this very GPU, so that a run need not start the probe
    (``probe_gpus``) again: ``[framework_gpu]`` of ``results_dir/doctor/<stack>-<flavor>.json`` (``image_checks``,
    ``ensure_measured_peak``) when that file's ``gpu`` has the NVML UUID of the GPU a cell of the stack gets now
    (``identify``: ``bench.instruments.environment.gpu_info`` of ``cell_env``) and its ``software`` is this process's
    (``same_software``: driver, image, framework and CUDA library versions). Else (None, why not): no file, no
    framework GPU in it, NVML sees no GPU, another GPU or software, or an environment that keeps the framework off
    the GPU (an empty ``CUDA_VISIBLE_DEVICES``, ``gpu_env_problem``), for which the probe answers as ever.
    Returns (GPUs, the line saying where they came from)."""
    from bench.instruments.environment import gpu_info

    s = STACKS[stack_id]
    path = results_dir / "doctor" / f"{stack_id}-{flavor}.json"
    env = cell_env(s, "gpu")
    if gpu_env_problem(s, "gpu", env) or ("CUDA_VISIBLE_DEVICES" in env and not env["CUDA_VISIBLE_DEVICES"].strip()):
        return None, "the environment may keep the framework off the GPU"
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return None, f"no {path.name}"
    seen, uuid = saved.get("framework_gpu"), (saved.get("gpu") or {}).get("uuid")
    if not seen or not uuid:
        return None, f"{path.name} holds no framework GPU with its NVML UUID"
    info = (identify or gpu_info)(env)
    if not info.get("available") or info.get("uuid") != uuid:
        return None, f"{path.name} was written on GPU {uuid}, not {info.get('uuid') or 'none (NVML)'}"
    same, why = same_software(current_software(info), saved.get("software"))
    if not same:
        return None, f"{path.name} was written under other software ({why})"
    return [seen], (f"{path.name} ({saved.get('utc')}): its framework ran a matmul on this GPU ({uuid}) under this "
                    "software")


#: What ``image_checks`` calls after each mode: (the checks so far, what ``save`` keeps beside them so far).
Progress = Callable[[list[Check], dict[str, Any]], object]


def image_checks(stack_id: str, device: str = "gpu",
                 measure: Callable[[str, str, bool], tuple[float | None, str]] = measure_gemm,
                 probe: Callable[[Any], list[str]] | None = None,
                 identify: Callable[[], dict[str, Any]] | None = None,
                 progress: Progress | None = None) -> tuple[list[Check], dict[str, Any]]:
    """Inside a stack's image: the framework sees the GPU and runs a matmul on it (``probe_gpus``),
    then the measured GEMM peak per mode (``GEMM_MODES``). Returns the checks and what ``save`` keeps beside
    them: ``gpu``, the GPU's NVML name and UUID (``identify``: ``bench.instruments.environment.gpu_info``, as a record's
    ``env.gpu``; None without NVML, then a ! check says the peak cannot be matched), ``software``, the driver, image
    and library versions it was measured under (``current_software``), ``framework_gpu``, the framework's name for
    the GPU, and ``measured_tflops`` (TFLOP/s by mode; None: it failed). ``progress`` (``peak_writer``) gets the checks
    and that dict after each mode, holding the modes measured so far, so that a signal between two modes loses
    none measured before it."""
    from bench.instruments.environment import gpu_info

    s = STACKS[stack_id]
    try:
        gpus = (probe or probe_gpus)(s)
    except RuntimeError as e:
        return [Check(f"{stack_id}: GPU", "fail", str(e), "see README, 'Drivers'")], {}
    if not gpus:
        state = "fail" if device == "gpu" else "info"
        return [Check(f"{stack_id}: GPU", state, f"the {s.backend} framework sees no GPU",
                      "start the container with a GPU (compose.gpu.yaml, the NVIDIA Container Toolkit)"
                      if device == "gpu" else "CPU run: no GPU checks in the image")], {}
    info = (identify or gpu_info)()
    gpu = nvml_identity(info)
    checks = [Check(f"{stack_id}: GPU", "ok", f"{gpus[0]}: a matmul ran")]
    if gpu is None:
        checks.append(Check(f"{stack_id}: GPU identity", "warn", info.get("reason", "NVML unavailable"),
                            "the measured peak cannot be matched to records (mfu_measured stays null): "
                            "nvidia-ml-py and the driver's NVML are needed in the image"))
    measured: dict[str, float | None] = {}
    extra = {"stack": stack_id, "gpu": gpu, "software": current_software(info), "framework_gpu": gpus[0],
             "measured_tflops": measured}
    for name, dtype, tf32 in GEMM_MODES:
        value, why = measure(stack_id, dtype, tf32)
        measured[name] = value
        checks.append(Check(f"{stack_id}: GEMM {name}", "ok" if value else "fail",
                            f"{value:.1f} TFLOP/s measured ({GEMM_N}^3)" if value else why))
        if progress:
            progress(list(checks), {**extra, "measured_tflops": dict(measured)})
    return checks, extra


def ensure_measured_peak(stack_id: str, results_dir: Path, flavor: str,
                         checks: Callable[..., tuple[list[Check], dict[str, Any]]] | None = None,
                         identify: Callable[[], dict[str, Any]] | None = None) -> str:
    """Before a GPU run: the image's measured GEMM peak on this GPU, which every cell's ``mfu_measured`` is set against,
    measured now (the doctor's image part, ``image_checks``, saved where ``make doctor`` saves it) unless
    ``results_dir/doctor/<stack>-<flavor>.json`` already holds every mode (``GEMM_MODES``) for this GPU
    (``same_gpu``) under this driver and image (``same_software``: after an image rebuild or a driver change every
    mode is measured again). A mode that failed before (saved as None) is measured again; one measured before is
    kept, not re-run. Each mode is saved as soon as it is measured (``peak_writer``): one stopped by a signal
    (``Interrupted``, ``KeyboardInterrupt``, raised on) loses only the mode it was measuring. So every path sets it in
    its own image on its own GPU: ``make bench-all`` (whose preflight is
    the host part only), a SkyPilot VM (``make doctor`` runs before the images exist there) and the Kubernetes Job.
    Returns one line saying which. ``checks`` / ``identify``: ``image_checks`` and
    ``bench.instruments.environment.gpu_info`` (tests pass fakes).

    Raises:
        InputError: a mode to measure, and a ``results_dir/doctor`` this process cannot write
            (``bench.core.atomic.unwritable``): before anything is measured.
    """
    from bench.instruments.environment import gpu_info

    path = results_dir / "doctor" / f"{stack_id}-{flavor}.json"
    info = (identify or gpu_info)()
    gpu, software = nvml_identity(info), current_software(info)
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        saved = {}
    kept = cached_tflops(saved, gpu, software)
    if all(name in kept for name, _, _ in GEMM_MODES):
        return f"{stack_id}: measured GEMM peak for this GPU, driver and image already in {path.name}"
    # kept beside every run, not in --out: a folder it cannot go into is one line before anything is measured (a
    # read-only one that already holds every mode is fine: nothing is written then)
    why = unwritable(path.parent)
    if why:
        raise InputError(f"cannot write the measured GEMM peak into the folder {str(path.parent)!r} "
                         f"($BENCH_RESULTS_DIR/doctor): {why}")
    same, why = same_software(software, saved.get("software"))
    again = f" (again: {why})" if saved.get("measured_tflops") and gpu and same_gpu(gpu, saved.get("gpu"))[0] \
        and not same else ""

    def measure(sid: str, dtype: str, tf32: bool) -> tuple[float | None, str]:
        name = next(n for n, d, t in GEMM_MODES if (d, t) == (dtype, tf32))
        return (kept[name], "") if name in kept else measure_gemm(sid, dtype, tf32)

    write = peak_writer(path, software)
    found, extra = (checks or (lambda sid, device: image_checks(sid, device, measure=measure, progress=write)))(
        stack_id, "gpu")
    measured_now = bool(extra)  # empty: the framework could not reach the GPU, and the file keeps what was
    extra = write(found, extra)
    if not measured_now:
        failed = "; ".join(c.value for c in found if c.state == "fail") or "no GPU check ran"
        return f"{stack_id}: nothing measured ({failed}); {path.name} keeps the peak measured before, if any"
    values = ", ".join(f"{k} {v:.1f}" for k, v in (extra.get("measured_tflops") or {}).items() if v)
    return f"{stack_id}: measured the GEMM peak on this GPU{again} ({values or 'no value'} TFLOP/s) -> {path}"

"""The GPU as each stack image's framework sees it: the probe (the framework imports, lists its GPUs and runs a
matmul), the image part of the preflight (``bench doctor``: that probe and the GEMM throughput it reaches, the
"measured peak"), and the measured peak a record's MFU is set against (``measured_peak``, keyed by the GPU's
NVML name and UUID and by the software it was measured under: the driver, and the image's local ID or its framework
and CUDA library versions). The host part of the preflight is ``bench.host.doctor``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.core import interrupt
from bench.core.atomic import unwritable
from bench.core.checks import Check, save
from bench.core.errors import InputError
from bench.core.stacks import STACKS, Stack
from bench.run.cellenv import cell_env, gpu_env_problem

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


#: The GEMM modes measured in each image: (name, dtype, TF32 allowed).
GEMM_MODES = (("bf16", "bfloat16", False), ("fp32", "float32", False), ("tf32", "float32", True))

#: GEMM size of the measured peak: large enough to saturate an A100/H100 (1.1 TFLOP per bf16 call).
GEMM_N = 8192

#: What ``image_checks`` calls after each mode: (the checks so far, what ``save`` keeps beside them so far).
Progress = Callable[[list[Check], dict[str, Any]], object]


def measure_gemm(stack_id: str, dtype: str, tf32: bool, device: str = "gpu", n: int = GEMM_N,
                 timeout_s: float = 600.0) -> tuple[float | None, str]:
    """Achieved TFLOP/s of n x n GEMMs of ``stack_id``'s framework in a fresh process
    (``python -m bench.run.gpucheck gemm``) with the environment a cell with that TF32 setting gets
    (``bench.run.cellenv.cell_env``); (None, why) when it fails."""
    s = STACKS[stack_id]
    mode = "on" if tf32 else "off"  # the knob values (bench.core.settings.TF32_MODES): TF32 GEMMs, or strict FP32
    command = [sys.executable, "-m", "bench.run.gpucheck", "gemm", s.backend, mode, dtype, str(n), device]
    try:
        p = subprocess.run(command, env=cell_env(s, device, {"tf32": mode}),
                           capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout_s:g} s"
    for line in p.stdout.splitlines():
        if line.startswith("TFLOPS "):
            return float(line.split()[1]), ""
    return None, ((p.stderr.strip().splitlines() or ["no output"])[-1])[:300]


#: The distributions whose versions decide the GEMM rate an image reaches, beside the driver: the frameworks the
#: probe drives and Triton, and the GPU runtime (``bench.instruments.environment.GPU_RUNTIME``: every ``nvidia-*`` one,
#: cuBLAS, cuDNN, ptxas, nvJitLink..., and XLA's CUDA plugin and PJRT; NVML's bindings, ``NOT_GEMM``, excepted). The
#: measured peak's key holds them where the image's identity is not known.
GEMM_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "jax", "jaxlib", "torch", "triton")
NOT_GEMM = ("nvidia-ml-py",)


def results_root() -> Path:
    """``$BENCH_RESULTS_DIR`` (default ``results``): where ``bench doctor`` saves what it saw (the GPUs, the measured
    peak, ``doctor/``) and a run without ``--out`` puts its run directory (``runs/``)."""
    return Path(os.environ.get("BENCH_RESULTS_DIR", "results"))


def image_identity(env: Mapping[str, str] | None = None) -> str | None:
    """The image a GEMM peak is measured in, as ``make`` passes it to the container: its local ID
    (``BENCH_IMAGE_ID``, ``docker image inspect``'s ``.Id``: unchanged when the image is tagged or pushed), else its
    digest (``BENCH_IMAGE_DIGEST``: the registry digest once pulled or pushed, else the local ID); None outside make
    (``env``: ``os.environ`` by default)."""
    env = os.environ if env is None else env
    return env.get("BENCH_IMAGE_ID") or env.get("BENCH_IMAGE_DIGEST") or None


def software_identity(driver: str | None, image: str | None, packages: dict[str, Any]) -> dict[str, Any]:
    """The software a GEMM peak is measured under, the second half of its key (``same_software``): the NVIDIA driver,
    the image (``image_identity``: its local ID, else its digest; a record's ``env.image_id`` or ``env.image_digest``;
    None outside make) and the framework and CUDA library versions among ``packages`` (``env.packages``:
    ``GEMM_DISTRIBUTIONS`` and the GPU runtime, ``bench.instruments.environment.GPU_RUNTIME``)."""
    from bench.instruments.environment import GPU_RUNTIME

    gemm = {k: v for k, v in sorted(packages.items())
            if k in GEMM_DISTRIBUTIONS or (GPU_RUNTIME.fullmatch(k) and k not in NOT_GEMM)}
    return {"image": image or None, "driver": driver or None, "packages": gemm}


def current_software(info: dict[str, Any]) -> dict[str, Any]:
    """``software_identity`` of this process: the driver NVML reported in ``info`` (``gpu_info``'s answer), this
    image's identity (``image_identity``) and the installed versions
    (``bench.instruments.environment.package_versions``), as a cell's record captures them (``env.gpu.driver``,
    ``env.image_id`` / ``env.image_digest``, ``env.packages``)."""
    from bench.instruments.environment import package_versions

    return software_identity(info.get("driver"), image_identity(), package_versions())


def same_software(mine: dict[str, Any], saved: dict[str, Any] | None) -> tuple[bool, str]:
    """Whether a peak saved under ``saved`` (a doctor file's ``software``) holds for software ``mine`` (both
    ``software_identity``; a file of the previous key holds ``image_digest`` in place of ``image``): the same driver,
    and the same image where both know one, else the same framework and CUDA library versions. An image rebuilt or
    a driver changed is another measurement. Returns (match, why not: what differs)."""
    if not saved:
        return False, "measured before the image and driver were part of its key"
    if mine.get("driver") != saved.get("driver"):
        return False, f"driver {saved.get('driver')}, not {mine.get('driver')}"
    theirs_image = saved.get("image", saved.get("image_digest"))
    if mine.get("image") and theirs_image:
        same = mine["image"] == theirs_image
        return same, "" if same else f"image {theirs_image}, not {mine['image']}"
    theirs, ours = saved.get("packages") or {}, mine.get("packages") or {}
    changed = [f"{k} {theirs.get(k)}, not {ours.get(k)}" for k in sorted(set(theirs) | set(ours))
               if theirs.get(k) != ours.get(k)]
    return not changed, "; ".join(changed)


def nvml_identity(info: dict[str, Any]) -> dict[str, str | None] | None:
    """The NVML name and UUID of ``bench.instruments.environment.gpu_info``'s answer (None without NVML): the key that
    ``measured_peak`` matches a record's ``env.gpu`` against."""
    if not info.get("available"):
        return None
    return {"name": info.get("name"), "uuid": info.get("uuid")}


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


def gemm_mode(precision: str, tf32: bool) -> str | None:
    """The ``GEMM_MODES`` name that matches a cell's math (None for float16, which is not measured)."""
    if precision == "bfloat16":
        return "bf16"
    if precision == "float32":
        return "tf32" if tf32 else "fp32"
    return None


def same_gpu(record_gpu: dict[str, Any], saved: Any) -> tuple[bool, str]:
    """Whether a record's GPU (its ``env.gpu``: NVML name and UUID) is the one a doctor file was measured on
    (its ``gpu``: NVML name and UUID; a plain string from an older doctor is taken as a name): the same UUID
    when both have one, else the same model name. Returns (match, what was compared)."""
    saved = {"name": saved} if isinstance(saved, str) else (saved or {})
    if record_gpu.get("uuid") and saved.get("uuid"):
        return record_gpu["uuid"] == saved["uuid"], f"GPU {saved['uuid']} ({saved.get('name')})"
    return bool(record_gpu.get("name")) and record_gpu.get("name") == saved.get("name"), repr(saved.get("name"))


def measured_peak(results_dir: Path, stack_id: str, flavor: str, gpu: dict[str, Any] | None, precision: str,
                  tf32: bool, software: dict[str, Any] | None = None) -> tuple[float | None, str]:
    """The GEMM FLOP/s ``make doctor`` measured for this stack's image on this GPU and math mode, from
    ``results_dir/doctor/<stack>-<flavor>.json``; ``gpu`` is the record's ``env.gpu`` (NVML name and UUID),
    matched by ``same_gpu``, and ``software`` the record's driver, image and library versions
    (``software_identity``; None: this process's, with ``gpu``'s driver), matched by ``same_software``. (None, why)
    when there is none, or it was measured on another GPU, or under another image or driver (not measured yet for
    this one)."""
    path = results_dir / "doctor" / f"{stack_id}-{flavor}.json"
    mode = gemm_mode(precision, tf32)
    if mode is None:
        return None, f"no measured peak for {precision}"
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return None, f"no measurement: run `make doctor` on this GPU first ({path.name})"
    match, what = same_gpu(gpu or {}, saved.get("gpu"))
    if not match:
        mine = (gpu or {}).get("uuid") or (gpu or {}).get("name")
        return None, f"{path.name} was measured on {what}, not {mine!r}"
    same, why = same_software(software if software is not None else current_software(gpu or {}),
                              saved.get("software"))
    if not same:
        return None, (f"no measurement for this image and driver yet ({path.name}: {why}): run `make doctor` on "
                      "this GPU first")
    value = (saved.get("measured_tflops") or {}).get(mode)
    if not value:
        return None, f"{path.name} has no {mode} measurement"
    return value * 1e12, f"{path.name} ({saved.get('utc')}), {mode} GEMM {GEMM_N}^3 on {what}"


def cached_tflops(saved: dict[str, Any], gpu: dict[str, Any] | None, software: dict[str, Any]) -> dict[str, float]:
    """The GEMM modes a doctor file ``saved`` holds a measurement for (TFLOP/s, truthy values only) when it was
    measured on ``gpu`` (``same_gpu``) under ``software`` (``same_software``); {} otherwise. A failed mode is saved
    as None and is not a measurement."""
    if not gpu or not same_gpu(gpu, saved.get("gpu"))[0] or not same_software(software, saved.get("software"))[0]:
        return {}
    return {k: v for k, v in (saved.get("measured_tflops") or {}).items() if v}


def merged_tflops(measured: Mapping[str, float | None], kept: Mapping[str, float]) -> dict[str, float | None]:
    """A doctor file's ``measured_tflops`` after a measurement that has ``measured`` so far (TFLOP/s by mode; None: it
    failed) over the file's ``kept`` modes (``cached_tflops``: measured on this GPU under this software): per mode this
    measurement's value where it succeeded, else the kept one, else None where it failed; absent where neither has it
    (not measured yet). ``GEMM_MODES``' order."""
    names = dict.fromkeys([*(n for n, _, _ in GEMM_MODES), *measured, *kept])
    return {n: measured.get(n) or kept.get(n) for n in names if n in measured or n in kept}


#: A doctor file's fields that describe its measured peak (``image_checks``' extra): kept by ``peak_writer`` when a
#: later check measures nothing. Not ``framework_gpu``: it says the framework ran a matmul on the GPU, which the
#: failed check contradicts (``recorded_gpus`` would let a run skip the probe on it).
MEASURED_KEYS = ("stack", "gpu", "software", "measured_tflops")


def peak_writer(path: Path, software: dict[str, Any] | None = None) -> Callable[[list[Check], dict[str, Any]], dict]:
    """The one writer of ``path`` (``results_dir/doctor/<stack>-<flavor>.json``), for ``image_checks``' ``progress``
    (after each GEMM mode) and its end: ``save`` (atomic, with a signal held back until the file is whole:
    ``bench.core.interrupt.shielded``, then raised), its ``software`` set to ``software`` where given, and its
    ``measured_tflops`` merged (``merged_tflops``) with the modes the file held before (read once, now) for the GPU and
    software written. So a reader sees, at every moment, a whole file whose modes were each measured on its ``gpu``
    under its ``software``, or are absent; a check that measured nothing (the GPU probe failed) keeps the file's
    measured fields (``MEASURED_KEYS``) beside its failed checks. Returns the ``extra`` it saved."""
    try:
        before = json.loads(path.read_text())
    except (OSError, ValueError):
        before = {}

    def write(found: list[Check], extra: dict[str, Any]) -> dict[str, Any]:
        extra = {**extra, "software": software} if extra and software is not None else dict(extra)
        if extra.get("measured_tflops") is None:  # nothing measured now (the GPU probe failed): what was measured stays
            extra = {k: before[k] for k in MEASURED_KEYS if k in before} | extra
        else:
            kept = cached_tflops(before, extra.get("gpu"), extra.get("software") or {})
            extra["measured_tflops"] = merged_tflops(extra["measured_tflops"], kept)
        with interrupt.shielded():
            save(path, "image", found, extra)
        interrupt.check()
        return extra

    return write


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

"""The measured GEMM peak a record's MFU is set against (``mfu_measured``): the GEMM throughput of a stack's framework,
measured in a fresh process per mode (``measure_gemm``, ``GEMM_MODES``), keyed by the GPU's NVML name and UUID
(``nvml_identity``, ``same_gpu``) and by the software it was measured under (``software_identity``,
``same_software``: the driver, and the image's local ID or its framework and CUDA library versions), saved mode by
mode in ``results_root()/doctor/<stack>-<flavor>.json`` (``peak_writer``) and looked up for a record
(``measured_peak``). What measures it, the doctor's image part, is ``bench.run.probe``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.core import interrupt
from bench.core.checks import Check, save
from bench.core.stacks import STACKS
from bench.run.cellenv import cell_env

#: The GEMM modes measured in each image: (name, dtype, TF32 allowed).
GEMM_MODES = (("bf16", "bfloat16", False), ("fp32", "float32", False), ("tf32", "float32", True))

#: GEMM size of the measured peak: large enough to saturate an A100/H100 (1.1 TFLOP per bf16 call).
GEMM_N = 8192


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


#: A doctor file's fields that describe its measured peak (``bench.run.probe.image_checks``' extra): kept by
#: ``peak_writer`` when a later check measures nothing. Not ``framework_gpu``: it says the framework ran a matmul on
#: the GPU, which the failed check contradicts (``bench.run.probe.recorded_gpus`` would let a run skip the probe on it).
MEASURED_KEYS = ("stack", "gpu", "software", "measured_tflops")


def peak_writer(path: Path, software: dict[str, Any] | None = None) -> Callable[[list[Check], dict[str, Any]], dict]:
    """The one writer of ``path`` (``results_dir/doctor/<stack>-<flavor>.json``), for
    ``bench.run.probe.image_checks``' ``progress`` (after each GEMM mode) and its end: ``save`` (atomic, with a signal
    held back until the file is whole: ``bench.core.interrupt.shielded``, then raised), its ``software`` set to
    ``software`` where given, and its ``measured_tflops`` merged (``merged_tflops``) with the modes the file held
    before (read once, now) for the GPU and software written. So a reader sees, at every moment, a whole file whose
    modes were each measured on its ``gpu`` under its ``software``, or are absent; a check that measured nothing (the
    GPU probe failed) keeps the file's measured fields (``MEASURED_KEYS``) beside its failed checks. Returns the
    ``extra`` it saved."""
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

"""The record's blocks about where and on what a cell ran: ``Gpu``, ``CudaCache``, ``Env`` and ``Telemetry``."""

from __future__ import annotations

from typing import Any

from bench.results.schema.blocks import Stats
from bench.results.schema.declare import Block, entry


class Gpu(Block):
    """``env.gpu``: the GPU as NVML sees it (``bench.instruments.environment.gpu_info``)."""

    available: bool | None = entry("NVML saw the process's GPU (false where CUDA shows it none: an empty "
                                    "CUDA_VISIBLE_DEVICES, as a CPU cell runs)")
    reason: str | None = entry("why not")
    name: str | None = entry("the GPU's model name")
    uuid: str | None = entry("its NVML UUID (repeats on two GPUs fail the cell)")
    count: int | None = entry("GPUs visible")
    driver: str | None = entry("driver version")
    cuda_driver: Any = entry("CUDA version the driver supports")
    memory_total_bytes: int | None = entry("device memory", "bytes")
    mig_mode: bool | None = entry("the GPU is in MIG mode, or the cell's device is a MIG slice (a MIG-... UUID in "
                                  "CUDA_VISIBLE_DEVICES; null where NVML does not say); then a note says energy is "
                                  "the whole GPU's and MFU has no datasheet peak (null)")
    nvml_device: Any = entry("the NVML device index")


class CudaCache(Block):
    """``env.cuda_cache``: the CUDA JIT cache (CUDA_CACHE_PATH, a compose volume) around the cell's process."""

    path: str | None = entry("CUDA_CACHE_PATH")
    maxsize: str | None = entry("CUDA_CACHE_MAXSIZE")
    bytes_before: int | None = entry("cache size before the cell's process started", "bytes")
    bytes_after: int | None = entry("cache size after it exited (the driver writes the cache at exit)", "bytes")
    jit_compiled: bool | None = entry("the cache grew: the driver JIT-compiled code during the cell (PTX for a GPU "
                                      "newer than a wheel's machine code, or runtime-compiled kernels), whose "
                                      "compile time may be inside the first step/epoch (null without the variable, "
                                      "or when it did not grow and the process was killed before its exit)")


class Env(Block):
    """``env``: where the cell ran (``bench.instruments.environment.capture``)."""

    python: str | None = entry("Python version")
    platform: str | None = entry("platform string")
    host: str | None = entry("host name")
    cpu_model: str | None = entry("CPU model")
    cpu_count: int | None = entry("logical CPUs")
    bench_version: str | None = entry("this package's version")
    git_commit: str | None = entry("the code that ran, as bench.core.commit names it (python3 -m bench.host commit): "
                                   "its HEAD, '<HEAD>-dirty.<12 hex>' where bench/ differed from it (the hex: a hash "
                                   "of the changed files' paths and contents, so other edits are another value), "
                                   "'<HEAD>-unchecked' where git could not list the changes. BENCH_GIT_COMMIT as "
                                   "given where set: in an image, what its build was given (make's GIT_COMMIT; an "
                                   "image pulled from a registry, the pusher's build, whose inputs, bench/ included, "
                                   "its tag hashes), the GPU window's command line; else asked of git in the "
                                   "package's checkout (older records name HEAD alone, or '<HEAD>-dirty' without "
                                   "the hash: edits not identified)")
    image: str | None = entry("the stack image's local name, dlbench/<stack>:<flavor>, baked in at its build (a "
                              "pulled image's registry name is in image_digest; null outside make)")
    image_digest: str | None = entry("the image the cell ran in: its first repository digest (a registry's when "
                                     "pulled, make bench-all REGISTRY=..., or pushed, make push; Docker's containerd "
                                     "image store lists a local one for a built image too), else its local image ID; "
                                     "a Kubernetes Job's image make push listed (null: outside make, or a Job's image "
                                     "pulled by tag)")
    image_id: str | None = entry("the image's local ID (docker image inspect's .Id: the same before and after "
                                 "tagging and pushing), the key of the GEMM peak measured in it (null outside make)")
    image_flavor: str | None = entry("the image flavor (cpu or gpu)")
    in_container: bool | None = entry("the cell ran inside a container (Docker, Podman, CRI-O, a Kubernetes pod, "
                                      "Apptainer/Singularity, SingularityCE's --oci mode, enroot; records before "
                                      "2026-11-27 saw Docker's mark only, and ones written before the git commits "
                                      "that added them saw neither Apptainer's nor enroot's nor --oci's)")
    native: bool | None = entry("no stack image ran the cell (BENCH_IMAGE unset): bench from a checkout on the "
                                "machine's own Python, as the GPU window runs it (docs/gpu-window.md); env.packages "
                                "holds what ran, not the images' pins; the report calls such GPU rows checks of the "
                                "harness, not published-grade rows (null: a record from before the field)")
    packages: dict[str, Any] = entry("package -> version of the frameworks and libraries", default={})
    stack_base: str | None = entry("a derived stack (make version-stack): the stack it is derived from; null otherwise")
    pins: dict[str, Any] = entry("a derived stack: per pinned package, the version installed in the container "
                                 "(importlib.metadata; null: not installed)", default={})
    pins_ok: bool | None = entry("a derived stack: every pinned package is installed at its declared version "
                                 "(false: the image is not what the stack declares); null otherwise")
    framework_cuda: dict[str, Any] = entry("per framework: the CUDA/cuDNN it was built with and the GPUs it sees",
                                           default={})
    gpu: Gpu = entry("the GPU and driver (NVML)", default=None)
    env_vars: dict[str, Any] = entry("the environment variables that change how a framework runs", default={})
    cuda_cache: CudaCache | None = entry("the CUDA JIT cache's growth over the cell's process (the runner's)")
    error: str | None = entry("why the environment could not be captured")


class Telemetry(Block):
    """``telemetry``: NVML over the timed window (``bench.instruments.telemetry``); repeat 1's for a repeated cell."""

    available: bool | None = entry("whether NVML telemetry was recorded")
    reason: str | None = entry("why not (CPU run, no NVML)")
    gpu_name: str | None = entry("the sampled GPU's name")
    gpu_index: int | str | None = entry("the sampled GPU: its NVML index, or the UUID (GPU-... / MIG-...) when "
                                             "CUDA_VISIBLE_DEVICES names it so")
    window: str | None = entry("the summarised window (the training steps of epochs 2..N, validation excluded, or "
                               "of the whole run with one epoch)")
    window_s: float | None = entry("its length", "s")
    samples: int | None = entry("samples in the window")
    interval_s: float | None = entry("sampling period", "s")
    gpu_util_pct: Stats | None = entry("NVML GPU utilisation rate over the window", "%")
    mem_util_pct: Stats | None = entry("NVML memory utilisation rate over the window", "%")
    power_w: Stats | None = entry("board power over the window", "W")
    power_source: str | None = entry("'instant' (NVML_FI_DEV_POWER_INSTANT) or 'average' (nvmlDeviceGetPowerUsage, "
                                     "where the field is not offered or gave no value at the cell's start; "
                                     "telemetry.notes says what it averages)")
    sm_clock_mhz: Stats | None = entry("SM clock over the window", "MHz")
    mem_clock_mhz: Stats | None = entry("memory clock over the window", "MHz")
    temperature_c: Stats | None = entry("GPU temperature over the window", "degC")
    memory_used_peak_bytes: int | None = entry("peak device memory in use as NVML sees it, all processes, with "
                                                 "what the driver sets aside (nvmlDeviceGetMemoryInfo used)", "bytes")
    idle_power_w: float | None = entry("mean power over 1 s before the workload started", "W")
    energy_j: float | None = entry("energy over the window: the counter delta between synchronised edges, or "
                                   "integrated sampled power when the counter is unusable", "J")
    energy_method: str | None = entry("counter or integrated_power")
    energy_counter_j: float | None = entry("the energy counter's estimate", "J")
    energy_integrated_j: float | None = entry("integrated sampled power's estimate", "J")
    energy_note: str | None = entry("why the counter was not used (stalled, reset) or was unwrapped")
    energy_counter_vs_integrated: float | None = entry("counter energy / integrated power energy (a check: ~1.0 "
                                                       "over windows of 10 s or more)", "ratio")
    energy_per_epoch_j: list[float | None] | None = entry(
        "energy of each epoch's training steps (its two edges' counter reads, else integrated sampled power; null "
        "for an epoch neither covered: a GPU whose power NVML does not read, such as a MIG slice); epochs under 1 s "
        "are named in telemetry.notes: the counter's ~20-100 ms updates make their J coarse", "J")
    j_per_epoch: float | None = entry("energy per steady epoch", "J")
    j_per_step: float | None = entry("energy per step", "J")
    examples_per_j: float | None = entry("examples per joule", "examples/J")
    energy_above_idle_j: float | None = entry("energy minus idle power x the window's time", "J")
    j_per_step_above_idle: float | None = entry("that per step", "J")
    throttled: bool | None = entry("whether thermal or hardware clock-event reasons (HwSlowdown, HwThermalSlowdown, "
                                   "HwPowerBrakeSlowdown, SwThermalSlowdown) were active")
    throttle_reasons: list[str] | None = entry("every clock-event reason seen (SwPowerCap included)")
    throttle_fraction: float | None = entry("share of samples under the thermal/hardware reasons", "fraction")
    power_capped_fraction: float | None = entry("share of samples with SwPowerCap (clocks held to the power limit: "
                                                "the normal state of a loaded A100/H100, not throttling)", "fraction")
    cpu_util_pct: float | None = entry("CPU time of the cell's process over the window, % of one core (also on CPU "
                                       "runs)", "%")
    notes: list[str] | None = entry("caveats of the window (short window, short epochs, averaged power, instant "
                                    "power readings without a value)")
    unsupported: dict[str, Any] = entry("metric -> NVML error for each metric the GPU or driver does not offer",
                                        default={})


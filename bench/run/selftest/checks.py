"""The self-test's checks, run inside one framework's child process (``python -m bench.run.selftest.checks BACKEND
DEVICE TF32 CHECK...``; ``bench.run.selftest.run`` starts it): each returns ``Result`` s, ours against the
independent side (``bench.run.selftest.independent``). Tolerances and their reasons: docs/selftest.md.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from bench.run.selftest import FAIL, NA, PASS, Result, at_most, failed, na, within
from bench.run.selftest import independent as ind


@dataclass(frozen=True)
class Load:
    """Sizes of the self-test's loads on one device kind (sized for <= 5 min per image on an A100/H100).

    ``gemm_n`` / ``gemm_reps``: the GEMM peak (``bench.run.peaks.GEMM_N``, 30 calls, on a GPU); ``step_n`` /
    ``steps``: the bf16 GEMM step of the barrier and MFU checks; ``math_n``: the float32 matmul of the math-mode
    check; ``energy_s``: the steady load of the energy check (s), after ``warm_s`` of the same load (the GPU's power
    settled before the window opens); ``alloc_bytes``: the memory check's allocation; ``repeats``: GEMM rate
    and step-time runs per side, interleaved, the best kept (1 on a GPU, as ``make doctor`` measures; 3 on a shared
    CPU).
    """

    gemm_n: int
    gemm_reps: int
    step_n: int
    steps: int
    math_n: int
    energy_s: float
    alloc_bytes: int
    warm_s: float = 2.0
    repeats: int = 1


LOADS = {"gpu": Load(gemm_n=8192, gemm_reps=30, step_n=8192, steps=50, math_n=1024, energy_s=10.0,
                     alloc_bytes=2**30),
         "cpu": Load(gemm_n=768, gemm_reps=24, step_n=1024, steps=20, math_n=512, energy_s=0.0, alloc_bytes=0,
                     warm_s=0.0, repeats=3)}

#: ours vs independent step time / GEMM rate. GPU: the barrier's own latency (~10-50 us) and the host's gap between
#: steps against multi-ms GEMM steps; CPU: shared cores and OS scheduling (medians compared, still noisy).
TIME_TOL = {"gpu": 0.05, "cpu": 0.25}
#: a measured GEMM rate may exceed the datasheet's dense peak by at most this (boost clocks; beyond it: bad timing)
PEAK_TOL = 0.05
#: relative error that separates TF32 (10-bit mantissa: ~1e-4..1e-3 here) from FP32 (~1e-7..1e-6 here)
TF32_ERROR = 3e-5
#: NVML's energy counter vs the integral of sampled power (1-s averaged power lags the load at the window's edges)
ENERGY_TOL = 0.10
#: the telemetry window may hold the timed region plus the sampler's own edge readings
WINDOW_TOL = 0.01
#: the framework's peak bytes vs NVML's used-memory delta (allocator granularity, rounding)
MEMORY_TOL = 0.10
#: GEMM precisions of the peak check by TF32 setting: bench.run.peaks.GEMM_MODES (bf16 and fp32 with TF32 off)
GEMM_BY_SETTING = {"on": (("tf32", "float32"),), "off": (("bf16", "bfloat16"), ("fp32", "float32")),
                   "default": ()}


def gpu_name() -> str | None:
    """The GPU's NVML name (``bench.instruments.environment.gpu_info``; None without NVML)."""
    from bench.instruments.environment import gpu_info

    info = gpu_info()
    return info.get("name") if info.get("available") else None


def barrier_and_mfu(backend: str, device: str, load: Load) -> list[Result]:
    """Barrier: the harness's ms/step (``EpochTimer`` at cadence ``step`` with the framework's barrier, p50 over
    steps 2..N of ``time_calls``) against the same bf16 GEMM steps timed independently (p50). MFU: the record's MFU
    (``worker.add_mfu`` on those ms/step) against 2 n^3 / independent step time / the datasheet peak by hand."""
    from bench.core.gpus import gpu_family
    from bench.instruments.timing import STEP, EpochTimer, time_calls
    from bench.models import flops
    from bench.models.engines import frameworks

    call = frameworks.framework(backend).gemm_call("bfloat16", load.step_n, device)
    ind.step_times_s(backend, call, 3, device)  # warm-up
    ours: dict[str, Any] = {}
    indep_s: list[float] = []
    for _ in range(load.repeats):  # interleaved, the lower p50 of each: other processes only slow a run down
        timer = EpochTimer(frameworks.make_barrier(backend, device), cadence=STEP)
        time_calls(call, load.steps, timer)
        run = timer.summary(batch_size=1, n_train=1)
        ours = run if not ours or run["ms_per_step_p50"] < ours["ms_per_step_p50"] else ours
        times = ind.step_times_s(backend, call, load.steps, device)
        indep_s = times if not indep_s or np.median(times) < np.median(indep_s) else indep_s
    how = "CUDA events" if backend == "torch" and device == "gpu" else "perf_counter, blocking on the output"
    out = [within("barrier", backend, ours["ms_per_step_p50"], 1000.0 * float(np.median(indep_s)), "ms/step",
                  TIME_TOL[device], f"EpochTimer sync=step ({ours['barriers']} barriers) vs {how}; bf16 GEMM "
                  f"{load.step_n}^3, p50 of {load.steps} steps")]
    name = gpu_name() if device == "gpu" else None
    fam = gpu_family(name)
    table = flops.PEAK_TFLOPS.get(fam) if fam else None
    if device != "gpu" or not table:
        why = "CPU: no datasheet peak" if device != "gpu" else f"no datasheet peak for GPU {name!r}"
        return [*out, na("mfu", backend, why, "fraction")]
    from bench.results.schema import Record
    from bench.run.worker import add_mfu

    step_flops = 2.0 * load.step_n**3
    rec = Record.model_validate({
        "metrics": {"flops_per_step": step_flops, "ms_per_step_mean": ours["ms_per_step_mean"]},
        "settings": {"precision": "bfloat16"}, "env": {"gpu": {"name": name}}, "device": "gpu"})
    add_mfu(rec)
    by_hand = step_flops / float(np.mean(indep_s)) / (table["bfloat16"] * 1e12)
    return [*out, within("mfu", backend, rec.metrics.mfu, by_hand, "fraction", TIME_TOL[device],
                         f"worker.add_mfu vs 2n^3 / event-timed step / {fam} bf16 {table['bfloat16']:g} TFLOP/s")]


def gemm_peak(backend: str, device: str, load: Load, setting: str) -> list[Result]:
    """The probe's GEMM rate (``gemm.gemm_tflops``, as ``make doctor`` measures the peak) per precision of
    this TF32 setting, against the same matmuls timed independently, and (GPU) against the datasheet peak."""
    from bench.models import flops
    from bench.models.engines import frameworks, gemm, math_mode

    math_mode.set_tf32(backend, setting)  # as bench.run.gpucheck gemm: switches of this setting, whatever ran before
    out = []
    name = gpu_name() if device == "gpu" else None
    for mode, dtype in GEMM_BY_SETTING[setting]:
        call = frameworks.framework(backend).gemm_call(dtype, load.gemm_n, device)
        ind.throughput_s(backend, call, 3, device)  # warm-up
        ours, indep = 0.0, 0.0
        for _ in range(load.repeats):  # interleaved, the best of each: other processes' load only slows a run down
            ours = max(ours, gemm.gemm_tflops(backend, dtype, n=load.gemm_n, reps=load.gemm_reps, device=device))
            secs = ind.throughput_s(backend, call, load.gemm_reps, device)
            indep = max(indep, 2.0 * load.gemm_n**3 * load.gemm_reps / secs / 1e12)
        cpu_note = " (a CPU has no TF32: FP32)" if mode == "tf32" and device != "gpu" else ""
        out.append(within(f"gemm {mode}", backend, ours, indep, "TFLOP/s", TIME_TOL[device],
                          f"gemm_tflops vs independently timed {load.gemm_reps} x {load.gemm_n}^3 {dtype}{cpu_note}"))
        if device != "gpu":
            out.append(na(f"gemm {mode} <= datasheet", backend, "CPU: no datasheet peak", "TFLOP/s"))
            continue
        peak, why = flops.peak_flops(name, dtype, mode == "tf32")
        out.append(na(f"gemm {mode} <= datasheet", backend, why, "TFLOP/s") if peak is None else
                   at_most(f"gemm {mode} <= datasheet", backend, ours, peak / 1e12, "TFLOP/s", PEAK_TOL, why))
    return out


def math_mode(backend: str, device: str, load: Load, setting: str) -> list[Result]:
    """What the record would write (``set_tf32`` then ``tf32_math``: ``settings.tf32_matmul/conv/rnn``) against what
    float32 ops of fixed random inputs show next to a float64 reference: relative error above ``TF32_ERROR`` means
    TF32 (or coarser) math, below it FP32. Recurrent layers: PyTorch's cuDNN LSTM; TensorFlow and JAX run them as
    plain matmuls, so the matmul's reading stands for them."""
    from bench.models.engines import math_mode as switches  # the module, not this check of the same name

    state = switches.set_tf32(backend, setting)
    # the LSTM checked on torch is nn.LSTM, plain PyTorch's cuDNN kernel on a GPU; elsewhere LSTMs are matmuls
    expected = switches.tf32_math(state, device, rnn_cudnn=switches.rnn_on_cudnn(backend, device))
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((load.math_n, load.math_n), dtype=np.float32) for _ in range(2))
    x = rng.standard_normal((4, 34, 34, 64), dtype=np.float32)
    k = rng.standard_normal((3, 3, 64, 64), dtype=np.float32)
    errors = {"matmul": ind.rel_error(ind.matmul32(backend, a, b, device), a.astype(np.float64) @ b),
              "conv": ind.rel_error(ind.conv32(backend, x, k, device), ind.conv64(x, k))}
    errors["rnn"] = ind.lstm_rel_error(0, device) if backend == "torch" else errors["matmul"]
    out = []
    for kind, err in errors.items():
        seen = err > TF32_ERROR
        said = expected.get(kind)
        verdict = PASS if said is not None and seen == bool(said) else NA if said is None else FAIL
        reason = (f"tf32={setting}: the record would write tf32_{kind}={said}; the numbers show "
                  f"{'TF32' if seen else 'FP32'} (relative error vs float64 {'>' if seen else '<='} {TF32_ERROR:g})"
                  + ("; measured on the matmul (recurrent layers are matmuls here)"
                     if kind == "rnn" and backend != "torch" else ""))
        out.append(Result(f"math {kind} tf32={setting}", backend, err, TF32_ERROR, "rel. error", err / TF32_ERROR,
                          None, verdict, reason))
    return out


def memory(backend: str, device: str, load: Load) -> list[Result]:
    """The framework's peak bytes (``frameworks.device_peak_bytes``, the record's peak) against NVML's used memory
    (the telemetry sampler's reading) grown by a held allocation of ``load.alloc_bytes``. Runs first in its
    process, so the peak is that allocation's; the child's environment turns off JAX's and TensorFlow's pools."""
    from bench.instruments.telemetry import sampler
    from bench.models.engines import frameworks

    if device != "gpu":
        return [na("memory", backend, "CPU: no device memory counter", "bytes")]
    tel = sampler.for_device("gpu")
    if not isinstance(tel, sampler.Telemetry):
        return [na("memory", backend, tel.reason, "bytes")]
    hold = _allocate(backend, 1024)  # the framework's context and allocator exist before the first reading
    before = tel.sample_once().memory_used_bytes
    hold = _allocate(backend, load.alloc_bytes)
    after = tel.sample_once().memory_used_bytes
    peak = frameworks.device_peak_bytes(backend, device)
    del hold
    if before is None or after is None:
        return [na("memory", backend, f"NVML memory: {tel.unsupported.get('memory')}", "bytes")]
    return [within("memory", backend, peak, after - before, "bytes", MEMORY_TOL,
                   f"device_peak_bytes vs NVML used-memory growth while {load.alloc_bytes / 2**30:g} GiB is held")]


def _allocate(backend: str, nbytes: int) -> Any:
    """A float32 array of ``nbytes`` on the GPU, materialised (zeros), with the device finished."""
    from bench.models.engines import frameworks

    n = nbytes // 4
    if backend == "torch":
        import torch

        arr: Any = torch.zeros(n, dtype=torch.float32, device="cuda")
    elif backend == "jax":
        import jax.numpy as jnp

        arr = jnp.zeros(n, jnp.float32)
    else:
        import tensorflow as tf

        with tf.device("/GPU:0"):
            arr = tf.zeros([n], tf.float32)
    frameworks.make_barrier(backend, "gpu")()
    return arr


def energy(backend: str, device: str, load: Load) -> list[Result]:
    """NVML's energy counter over a steady bf16 GEMM load of ``load.energy_s`` against the integral of the sampled
    power over the same window (both from the telemetry summary the record gets), and the telemetry window's length
    against the timed region's (``EpochTimer`` with the sampler as its window, cadence ``epoch``)."""
    from bench.instruments.telemetry import sampler
    from bench.instruments.timing import EPOCH, EpochTimer
    from bench.models.engines import frameworks

    if device != "gpu":
        return [na("energy", backend, "CPU: no NVML energy counter", "J"),
                na("energy window", backend, "CPU: no telemetry window", "s")]
    tel = sampler.for_device("gpu")
    if not isinstance(tel, sampler.Telemetry):
        return [na("energy", backend, tel.reason, "J"), na("energy window", backend, tel.reason, "s")]
    call = frameworks.framework(backend).gemm_call("bfloat16", load.step_n, device)
    fw = frameworks.framework(backend)
    _run_for(lambda: fw.run_and_wait(call, 10, device), load.warm_s)  # the GPU at steady power before the window
    timer = EpochTimer(frameworks.make_barrier(backend, device), window=tel, cadence=EPOCH)
    timer.begin_epoch()
    steps = _run_for(lambda: fw.run_and_wait(call, 10, device), load.energy_s) * 10
    timer.end_epoch(steps)
    tel.stop()
    s = tel.summary(steps, None)
    timed = timer.summary(1, steps)["epoch_s"][0]
    return [within("energy", backend, s["energy_counter_j"], s["energy_integrated_j"], "J", ENERGY_TOL,
                   f"NVML energy counter vs integrated {tel.power_source} power ({s['samples']} samples) over "
                   f"{s['window_s']:.1f} s; {s['energy_note'] or 'no counter note'}"),
            window_check(backend, s["window_s"], timed)]


def window_check(backend: str, window_s: float | None, timed_s: float) -> Result:
    """The telemetry window (first ``mark`` .. ``end_epoch``, s) must hold the timed region (s): ``mark`` comes after
    the opening barrier and before the timer's first clock read, ``end_epoch`` after its last, so the window is at
    least as long, and longer only by the sampler's own edge readings (``WINDOW_TOL``)."""
    r = within("energy window", backend, window_s, timed_s, "s", WINDOW_TOL,
               "telemetry window (mark .. end_epoch) vs the timer's timed region: it must hold it")
    if window_s is not None and window_s < timed_s:
        r.verdict, r.reason = FAIL, f"the telemetry window is shorter than the timed region: {r.reason}"
    return r


def _run_for(body: Callable[[], None], seconds: float) -> int:
    """Call ``body`` until ``seconds`` have passed; returns the number of calls."""
    n, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        body()
        n += 1
    return n


def gpu_missing(backend: str, device: str) -> str | None:
    """Why the framework cannot run the GPU checks here (None when it sees a GPU or the device is the CPU)."""
    from bench.models.engines import frameworks

    if device == "gpu" and not frameworks.gpu_devices(backend):
        return f"{backend} sees no GPU in this process"
    return None


#: check name -> function(backend, device, load, setting)
CHECKS: dict[str, Callable[[str, str, Load, str], list[Result]]] = {
    "memory": lambda b, d, ld, s: memory(b, d, ld),
    "barrier": lambda b, d, ld, s: barrier_and_mfu(b, d, ld),
    "gemm": gemm_peak,
    "math": math_mode,
    "energy": lambda b, d, ld, s: energy(b, d, ld),
}


def main(argv: list[str]) -> int:
    """Child entry: ``BACKEND DEVICE TF32 CHECK...``; prints one ``SELFTEST<json>`` line with the framework's version
    and every result (a check that raises becomes a failed result with the error's first line)."""
    backend, device, setting, names = argv[0], argv[1], argv[2], argv[3:]
    from bench.models.engines import frameworks

    frameworks.import_backend(backend)
    version = getattr(sys.modules[frameworks.framework(backend).module], "__version__", None)
    results: list[Result] = []
    missing = gpu_missing(backend, device)
    for name in names:
        if missing:  # e.g. a CPU build of TensorFlow beside the image's own framework
            results.append(na(name, backend, missing))
            continue
        try:
            results += CHECKS[name](backend, device, LOADS[device], setting)
        except Exception as e:  # one line per failed check, the others still run
            results.append(failed(name, backend, f"{type(e).__name__}: {e}".splitlines()[0][:300]))
    print("SELFTEST" + json.dumps({"version": version, "results": [asdict(r) for r in results]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

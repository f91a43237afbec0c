"""``bench selftest``: the verdict arithmetic, the GPU-only paths (datasheet peak, TF32 read on a "gpu", NVML energy and
memory, MFU) through fakes, a broken barrier caught, and the real CPU run in a subprocess."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

from bench.instruments import timing
from bench.instruments.telemetry import sampler
from bench.models.engines import frameworks, gemm, math_mode
from bench.run import selftest
from bench.run.selftest import checks, run
from bench.run.selftest import independent as ind
from tests.helpers.fake_nvml import FakeNvml

ROOT = Path(__file__).resolve().parents[3]
H100 = "NVIDIA H100 80GB HBM3"
SMALL = checks.Load(gemm_n=8192, gemm_reps=30, step_n=8192, steps=12, math_n=64, energy_s=0.6, alloc_bytes=2**30,
                    warm_s=0.05)


def test_within_and_at_most_verdicts():
    r = selftest.within("x", "torch", 10.4, 10.0, "ms", 0.05, "what")
    assert (r.verdict, round(r.ratio, 3)) == ("pass", 1.04)
    assert selftest.within("x", "torch", 10.6, 10.0, "ms", 0.05, "").verdict == "fail"
    assert selftest.within("x", "torch", 9.4, 10.0, "ms", 0.05, "").verdict == "fail"
    assert selftest.within("x", "torch", None, 10.0, "ms", 0.05, "").verdict == "fail"  # a missing number fails
    assert selftest.within("x", "torch", 1.0, 0.0, "ms", 0.05, "").ratio is None
    assert selftest.at_most("x", "torch", 0.5, 1.0, "TFLOP/s", 0.05, "").verdict == "pass"
    assert selftest.at_most("x", "torch", 1.06, 1.0, "TFLOP/s", 0.05, "").verdict == "fail"


class VirtualClock:
    """A clock that only the fake device moves: a call's dispatch costs ``dispatch_s``, a barrier jumps to the end of
    the queued work. Timings read from it are exact, whatever else the CPU is doing (real sleeps on a loaded 2-core
    machine stretched the barrier's steps past the 5 % tolerance)."""

    def __init__(self, dispatch_s: float = 1e-5):
        self.now, self.dispatch_s = 0.0, dispatch_s

    def __call__(self) -> float:
        return self.now


class AsyncDevice:
    """A device that queues work: a call returns at once, the barrier waits until the queued time has passed.
    ``clock``: a ``VirtualClock`` (the barrier advances it; nothing sleeps), else real time."""

    def __init__(self, step_s: float, clock: VirtualClock | None = None):
        self.step_s, self.busy_until, self.clock = step_s, 0.0, clock

    def now(self) -> float:
        return self.clock() if self.clock else time.perf_counter()

    def call(self):
        if self.clock:
            self.clock.now += self.clock.dispatch_s
        self.busy_until = max(self.busy_until, self.now()) + self.step_s
        return self.busy_until

    def barrier(self):
        if self.clock:
            self.clock.now = max(self.clock.now, self.busy_until)
        while self.now() < self.busy_until:
            pass

    def run_and_wait(self, call, reps, device):
        for _ in range(reps):
            call()
        self.barrier()


def fake_framework(monkeypatch, dev: AsyncDevice, broken_barrier: bool = False, gpu: str | None = H100):
    fw = types.SimpleNamespace(gemm_call=lambda dtype, n, device: dev.call, run_and_wait=dev.run_and_wait)
    monkeypatch.setattr(frameworks, "framework", lambda backend: fw)
    monkeypatch.setattr(frameworks, "make_barrier",
                        lambda backend, device: (lambda: None) if broken_barrier else dev.barrier)
    monkeypatch.setattr(checks, "gpu_name", lambda: gpu)

    def independent(backend, call, steps, device):  # device-side time: when each step's work ended
        out = []
        for _ in range(steps):
            t0 = max(dev.now(), dev.busy_until)
            out.append(call() - t0)
        dev.barrier()
        return out

    monkeypatch.setattr(ind, "step_times_s", independent)


def test_barrier_and_mfu_pass_on_a_true_barrier_and_a_broken_barrier_fails(monkeypatch):
    dev = AsyncDevice(0.004, clock=VirtualClock())
    monkeypatch.setattr(timing, "clock", dev.clock)  # the harness's EpochTimer reads the same virtual time
    fake_framework(monkeypatch, dev)
    barrier, mfu = checks.barrier_and_mfu("torch", "gpu", SMALL)
    assert barrier.verdict == "pass", barrier
    assert mfu.verdict == "pass", mfu
    # 2 * 8192^3 FLOP per 4 ms step on an H100 SXM (989.5 TFLOP/s dense bf16)
    assert mfu.reference == pytest.approx(2 * 8192**3 / 0.004 / 989.5e12, rel=0.05)
    fake_framework(monkeypatch, dev, broken_barrier=True)  # the clock reads dispatch, not the device's work
    barrier, _ = checks.barrier_and_mfu("torch", "gpu", SMALL)
    assert barrier.verdict == "fail" and barrier.ratio < 0.5, barrier


def test_mfu_is_na_with_the_reason_on_a_gpu_without_a_datasheet_peak(monkeypatch):
    fake_framework(monkeypatch, AsyncDevice(0.002), gpu="NVIDIA A10G")
    _, mfu = checks.barrier_and_mfu("torch", "gpu", SMALL)
    assert mfu.verdict == "n/a" and "A10G" in mfu.reason


@pytest.mark.parametrize("tflops, verdict", [(900.0, "pass"), (1030.0, "pass"), (1100.0, "fail")])
def test_gemm_peak_against_the_datasheet(monkeypatch, tflops, verdict):
    """bf16 on an H100 SXM: 989.5 TFLOP/s dense; more than 5 % above it is a timing error."""
    monkeypatch.setattr(gemm, "gemm_tflops", lambda *a, **k: tflops)
    applied = []
    monkeypatch.setattr(math_mode, "set_tf32", lambda backend, mode: applied.append(mode))
    monkeypatch.setattr(frameworks, "framework", lambda b: types.SimpleNamespace(gemm_call=lambda *a: None))
    secs = 2 * 8192**3 * 30 / (tflops * 1e12)
    monkeypatch.setattr(ind, "throughput_s", lambda backend, call, reps, device: secs * reps / 30)
    monkeypatch.setattr(checks, "gpu_name", lambda: H100)
    found = {r.check: r for r in checks.gemm_peak("torch", "gpu", SMALL, "off")}
    assert found["gemm bf16"].verdict == "pass" and found["gemm bf16"].ratio == pytest.approx(1.0)
    assert found["gemm bf16 <= datasheet"].verdict == verdict
    assert found["gemm bf16 <= datasheet"].reference == 989.5
    assert found["gemm fp32 <= datasheet"].reference == 67.0  # strict FP32 (the off setting) against FP32's peak
    assert applied == ["off"]  # the setting's switches, as the probe sets them, not left to an earlier check


def with_error(rel: float):
    """A stand-in for a float32 op whose result differs from the float64 one by ``rel`` (relative, Frobenius)."""
    def op(backend, a, b, device):
        want = a.astype(np.float64) @ b if a.ndim == 2 else ind.conv64(a, b)
        return want * (1 + rel)
    return op


@pytest.mark.parametrize("state, errors, verdicts", [
    # torch's shipped default on a GPU: matmul FP32, cuDNN TF32: numbers that agree pass
    ({"NVIDIA_TF32_OVERRIDE": None, "torch_matmul_allow_tf32": False, "torch_cudnn_allow_tf32": True},
     (1e-7, 4e-4, 4e-4), ("pass", "pass", "pass")),
    # the record would say FP32 matmuls, the numbers show TF32: the switch did not hold
    ({"NVIDIA_TF32_OVERRIDE": None, "torch_matmul_allow_tf32": False, "torch_cudnn_allow_tf32": True},
     (4e-4, 4e-4, 4e-4), ("fail", "pass", "pass")),
    # tf32=off: the override makes everything FP32, whatever the switches say
    ({"NVIDIA_TF32_OVERRIDE": "0", "torch_matmul_allow_tf32": True, "torch_cudnn_allow_tf32": True},
     (1e-7, 1e-7, 1e-7), ("pass", "pass", "pass")),
    ({"NVIDIA_TF32_OVERRIDE": "0", "torch_matmul_allow_tf32": True, "torch_cudnn_allow_tf32": True},
     (1e-7, 4e-4, 1e-7), ("pass", "fail", "pass")),
])
def test_math_mode_on_a_gpu_compares_what_the_record_would_write_with_the_numbers(monkeypatch, state, errors,
                                                                                  verdicts):
    monkeypatch.setattr(math_mode, "set_tf32", lambda backend, mode: state)
    monkeypatch.setattr(ind, "matmul32", with_error(errors[0]))
    monkeypatch.setattr(ind, "conv32", with_error(errors[1]))
    monkeypatch.setattr(ind, "lstm_rel_error", lambda seed, device: errors[2])
    found = checks.math_mode("torch", "gpu", SMALL, "default")
    assert [r.check for r in found] == ["math matmul tf32=default", "math conv tf32=default", "math rnn tf32=default"]
    assert tuple(r.verdict for r in found) == verdicts, [r.reason for r in found]
    assert found[0].measured == pytest.approx(errors[0], rel=1e-3)


def test_math_mode_of_jax_on_a_gpu_reads_recurrent_layers_from_the_matmul(monkeypatch):
    monkeypatch.setattr(math_mode, "set_tf32", lambda b, m: {"jax_default_matmul_precision": None})
    monkeypatch.setattr(ind, "matmul32", with_error(4e-4))
    monkeypatch.setattr(ind, "conv32", with_error(4e-4))
    found = checks.math_mode("jax", "gpu", SMALL, "default")
    assert [r.verdict for r in found] == ["pass"] * 3 and "matmul" in found[2].reason


class PowerLies(FakeNvml):
    """Sampled power reads ``factor`` times what the energy counter integrates."""

    factor = 1.0

    def nvmlDeviceGetFieldValues(self, h, ids):
        v = super().nvmlDeviceGetFieldValues(h, ids)
        v[0].value.uiVal = int(v[0].value.uiVal * self.factor)
        return v


@pytest.mark.parametrize("factor, verdict", [(1.0, "pass"), (0.7, "fail")])
def test_energy_counter_against_integrated_power_through_a_fake_nvml(monkeypatch, factor, verdict):
    fake_framework(monkeypatch, AsyncDevice(0.002))
    nv = PowerLies(time.perf_counter, watts=300.0)
    nv.factor = factor
    monkeypatch.setattr(sampler, "for_device", lambda device: sampler.Telemetry(nv, interval_s=0.02))
    # a 2 s window: WINDOW_TOL (1 %) is then 20 ms, above how late the sampler's edge readings can come on a
    # loaded 2-core machine (8 ms over a 0.6 s window's 6 ms was seen); a GPU's 10 s window allows 100 ms
    energy, window = checks.energy("torch", "gpu", dataclasses.replace(SMALL, energy_s=2.0))
    assert energy.verdict == verdict, energy
    assert energy.reference == pytest.approx(300.0 * factor * energy.measured / 300.0, rel=0.05)
    assert window.verdict == "pass" and window.measured >= window.reference, window


def test_energy_and_memory_are_na_with_the_reason_without_nvml(monkeypatch):
    monkeypatch.setattr(sampler, "for_device", lambda device: sampler.NullTelemetry("NVML unavailable: no lib"))
    assert checks.energy("torch", "gpu", SMALL)[0].reason == "NVML unavailable: no lib"
    assert checks.memory("torch", "gpu", SMALL)[0].verdict == "n/a"
    assert {r.verdict for r in checks.energy("torch", "cpu", SMALL) + checks.memory("torch", "cpu", SMALL)} == {"n/a"}


class HeldMemory(FakeNvml):
    used = 500 * 2**20

    def nvmlDeviceGetMemoryInfo(self, h):
        return types.SimpleNamespace(used=self.used, total=80 * 2**30)


@pytest.mark.parametrize("peak_factor, verdict", [(1.0, "pass"), (0.5, "fail")])
def test_memory_peak_against_nvml_while_an_allocation_is_held(monkeypatch, peak_factor, verdict):
    nv = HeldMemory(time.perf_counter)
    monkeypatch.setattr(sampler, "for_device", lambda device: sampler.Telemetry(nv, background=False))

    def allocate(backend, nbytes):  # the allocator rounds up to 2 MiB, as NVML sees it
        nv.used += -(-nbytes // 2**21) * 2**21
        return object()

    monkeypatch.setattr(checks, "_allocate", allocate)
    monkeypatch.setattr(frameworks, "device_peak_bytes", lambda b, d: int((2**30 + 1024) * peak_factor))
    (r,) = checks.memory("torch", "gpu", SMALL)
    assert r.verdict == verdict and r.reference == 2**30, r


def test_a_crashing_child_gives_failed_results_naming_the_error(monkeypatch):
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: types.SimpleNamespace(
        stdout="", stderr="Traceback...\nImportError: libcuda.so.1: cannot open", returncode=1))
    version, found = run.run_child("torch", "gpu", "on", ["math", "gemm"])
    assert version is None and [r.verdict for r in found] == ["fail", "fail"]
    assert "libcuda.so.1" in found[0].reason


def test_the_child_env_sets_the_tf32_override_only_for_off(monkeypatch):
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")
    assert "NVIDIA_TF32_OVERRIDE" not in run.child_env("gpu", "default")
    assert "NVIDIA_TF32_OVERRIDE" not in run.child_env("gpu", "on")
    assert run.child_env("gpu", "off")["NVIDIA_TF32_OVERRIDE"] == "0"
    assert run.child_env("cpu", "on")["CUDA_VISIBLE_DEVICES"] == ""


def bench(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_bad_input_is_one_line_and_exit_2():
    p = bench("selftest", "--framework", "mxnet")
    assert p.returncode == 2 and "unknown framework(s) mxnet" in p.stderr and "Traceback" not in p.stderr


def test_selftest_runs_for_real_on_the_cpu(tmp_path):
    """torch and JAX on the CPU: the device-generic checks run and give two numbers each, the GPU-only ones are
    n/a with the reason, the math mode is FP32 as the record would say, and the exit code follows the verdicts."""
    pytest.importorskip("torch")
    pytest.importorskip("jax")
    out = tmp_path / "selftest.json"
    p = bench("selftest", "--device", "cpu", "--framework", "torch", "--framework", "jax", "--out", str(out))
    rec = json.loads(out.read_text())
    assert p.returncode == (1 if rec["counts"]["fail"] else 0), p.stdout + p.stderr
    assert rec["device"] == "cpu" and set(rec["frameworks"]) == {"torch", "jax"} and all(rec["frameworks"].values())
    by = {(c["framework"], c["check"]): c for c in rec["checks"]}
    for fw in ("torch", "jax"):
        for name in ("barrier", "gemm bf16", "gemm fp32", "gemm tf32"):
            c = by[(fw, name)]
            assert c["measured"] > 0 and c["reference"] > 0, c
            assert c["ratio"] == pytest.approx(c["measured"] / c["reference"]) and c["verdict"] in ("pass", "fail")
        for setting in ("default", "on", "off"):
            for kind in ("matmul", "conv", "rnn"):
                c = by[(fw, f"math {kind} tf32={setting}")]
                assert c["verdict"] == "pass" and c["measured"] < checks.TF32_ERROR, c  # a CPU has no TF32
        for name in ("memory", "mfu", "gemm bf16 <= datasheet"):
            assert by[(fw, name)]["verdict"] == "n/a" and by[(fw, name)]["reason"].startswith("CPU"), name
    assert by[("torch", "energy")]["verdict"] == "n/a" and ("jax", "energy") not in by  # the first framework's
    assert "selftest on cpu" in p.stdout and "verdict" in p.stdout


def test_make_selftest_names_make_build_when_an_image_is_not_built(tmp_path):
    p = subprocess.run(["make", "-s", "selftest", "STACKS=keras3-jax", "DEVICE=cpu", "DOCKER=false",
                        f"RESULTS_DIR={tmp_path}", f"PYTHON={sys.executable}"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "image dlbench/keras3-jax:cpu not built yet: run make build STACKS=keras3-jax" in p.stderr
    assert not (tmp_path / "selftest").exists()


def test_the_telemetry_window_must_hold_the_timed_region():
    assert checks.window_check("torch", 10.02, 10.0).verdict == "pass"
    assert checks.window_check("torch", 10.5, 10.0).verdict == "fail"  # holds more than the timed steps
    short = checks.window_check("torch", 9.95, 10.0)  # within 1 %, but misses part of the timed region
    assert short.verdict == "fail" and "shorter" in short.reason


def test_an_unwritable_out_file_is_one_line_not_a_traceback(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    p = bench("selftest", "--device", "cpu", "--framework", "torch", "--out",
              str(blocker / "x.json"))
    # refused before anything is measured (``bench.cli.common.output_file``), one line naming the folder
    assert p.returncode == 2 and "cannot write into the folder" in p.stderr and str(blocker) in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1

"""What the GPU did during a cell's timed window, read through NVML (nvidia-ml-py).

A background thread samples utilisation, memory, power, clocks, temperature and clock-event (throttle)
reasons every ``interval_s``; energy comes from the total-energy counter (mJ since driver load) read at
synchronised window edges. Every metric a GPU or driver does not offer is null with its reason in
``unsupported``, and the cell still succeeds. Facts relied on: docs/platform.md, "NVML".

Window protocol (the engines follow it through ``bench.run.timing.EpochTimer``): the caller synchronises
the device, then calls ``mark()`` at the start of every epoch (the first mark opens the window and
starts the sampler), ``end_epoch()`` right after the epoch's last training step (before validation),
and ``stop()`` after the last one. An epoch without ``end_epoch`` ends at the next mark (or at stop).
Summaries and energy cover the training steps of the steady epochs (2..N) when there are at least two,
else of the whole run: exactly the steps the time metrics cover, never validation.
"""

from __future__ import annotations

import csv
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from bench.run.nvml import describe_error, device_handle, init, nvml_index, shutdown

#: The energy counter is an unsigned 64-bit count of millijoules.
ENERGY_COUNTER_MODULUS = 2**64
#: A counter step larger than this (J per second of wall time) cannot be real energy: a reset, not a wrap.
MAX_PLAUSIBLE_W = 5000.0
#: The counter updates every ~20-100 ms (docs/platform.md, "NVML": NVML's API reference gives no update interval for
#: ``nvmlDeviceGetTotalEnergyConsumption``; Yang et al., "Part-time Power Measurements", arXiv:2312.02741, measured
#: the A100/H100 sensor's power updating every 100 ms); a window, or an epoch's own J, shorter than this gets a note.
MIN_WINDOW_S = 1.0
DEFAULT_INTERVAL_S = 0.1
IDLE_WINDOW_S = 1.0

#: Clock-event reasons that mean the GPU slowed itself for heat or power (names without the prefix).
THROTTLE_REASONS = ("HwSlowdown", "HwThermalSlowdown", "HwPowerBrakeSlowdown", "SwThermalSlowdown", "SwPowerCap")
#: SwPowerCap (clocks held down to stay under the power limit) is the normal state of a loaded A100/H100, so it
#: is reported as its own share of samples (``power_capped_fraction``); ``throttled`` comes from the others.
POWER_CAP_REASONS = ("SwPowerCap",)
ALL_REASONS = (*THROTTLE_REASONS, "GpuIdle", "ApplicationsClocksSetting", "SyncBoost", "DisplayClockSetting")


#: GPUs built on GA100 (A100, A800, A30), by NVML name: their ``nvmlDeviceGetPowerUsage`` is instantaneous.
GA100_NAME = re.compile(r"\bA(100|800|30)X?\b")
#: NVML's architecture number of Ampere (``NVML_DEVICE_ARCH_AMPERE``, nvidia-ml-py 13.615.71).
ARCH_AMPERE = 7


def averaged_power_kind(name: str, arch: int | None) -> str | None:
    """What ``nvmlDeviceGetPowerUsage`` returns on the GPU named ``name`` of NVML architecture ``arch``:
    "1-s average" or "instantaneous"; None when ``arch`` is unknown and the name is not a GA100 one.

    nvml.h (nvidia-nvml-dev 13.5.37, ``nvmlDeviceGetPowerUsage``): "On Ampere (except GA100) or newer GPUs, the
    API returns power averaged over 1 sec interval. On GA100 and older architectures, instantaneous power is
    returned." Ampere's GA100 and GA10x share one architecture number, so GA100 is told by name.
    """
    if GA100_NAME.search(name):
        return "instantaneous"
    if arch is None:
        return None
    return "1-s average" if arch >= ARCH_AMPERE else "instantaneous"


def averaged_power_note(name: str, arch: int | None) -> str:
    """The telemetry note of a window whose power came from ``nvmlDeviceGetPowerUsage`` (``averaged_power_kind``)."""
    kind = averaged_power_kind(name, arch)
    head = "power is NVML's nvmlDeviceGetPowerUsage reading (NVML_FI_DEV_POWER_INSTANT not offered)"
    if kind == "instantaneous":
        return f"{head}: instantaneous on {name} (GA100 and pre-Ampere GPUs)"
    if kind == "1-s average":
        return f"{head}: a 1-s average on {name} (Ampere except GA100, and newer), so it lags and smooths the load"
    return (f"{head}: a 1-s average on Ampere-and-newer GPUs other than GA100, instantaneous on GA100 and older; "
            f"the architecture of {name} is unknown")


@dataclass
class Sample:
    """One reading. Units: t s (the bench clock), util %, memory bytes, power W, clocks MHz, temp degC,
    energy mJ (raw counter), reasons a bitmask. None where the metric is not available."""

    t: float
    gpu_util_pct: float | None = None
    mem_util_pct: float | None = None
    memory_used_bytes: int | None = None
    power_w: float | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    temperature_c: float | None = None
    clocks_event_reasons: int | None = None
    energy_mj: int | None = None


SAMPLE_FIELDS = tuple(f.name for f in fields(Sample))
SUMMARISED = ("gpu_util_pct", "mem_util_pct", "power_w", "sm_clock_mhz", "mem_clock_mhz", "temperature_c")


def stats(values: list[float]) -> dict[str, float | None]:
    """mean, p50 and max of ``values`` (all None when empty)."""
    if not values:
        return {"mean": None, "p50": None, "max": None}
    a = np.asarray(values, dtype=np.float64)
    return {"mean": float(a.mean()), "p50": float(np.percentile(a, 50)), "max": float(a.max())}


def counter_energy_j(readings: list[tuple[float, int]]) -> tuple[float | None, str | None]:
    """Energy in J over a series of (t s, counter mJ) readings, unwrapping a 64-bit wrap.

    Returns (joules, note). Joules is None when the counter went backwards by an implausible amount
    (a driver reset) or never advanced (stalled); the note says which.
    """
    if len(readings) < 2:
        return None, "fewer than two energy-counter readings"
    total_mj, wrapped = 0, False
    for (t0, e0), (t1, e1) in zip(readings, readings[1:], strict=False):
        d = e1 - e0
        if d < 0:
            d += ENERGY_COUNTER_MODULUS
            wrapped = True
        if d / 1000.0 > MAX_PLAUSIBLE_W * max(t1 - t0, 1e-3) + 1.0:
            return None, "energy counter jumped or went backwards (driver reset?); not usable"
        total_mj += d
    if total_mj == 0:
        return None, "energy counter did not advance during the window (stalled)"
    return total_mj / 1000.0, ("energy counter wrapped during the window (unwrapped)" if wrapped else None)


def integrated_energy_j(samples: list[Sample], t0: float, t1: float) -> float | None:
    """Trapezoidal integral of sampled power over [t0, t1] (J); None with fewer than two power samples."""
    pts = [(s.t, s.power_w) for s in samples if s.power_w is not None and t0 <= s.t <= t1]
    if len(pts) < 2:
        return None
    t = np.array([p[0] for p in pts])
    p = np.array([p[1] for p in pts])
    # extend flat to the edges so that the whole window is covered
    t = np.concatenate([[t0], t, [t1]])
    p = np.concatenate([[p[0]], p, [p[-1]]])
    return float(np.sum((p[1:] + p[:-1]) / 2.0 * np.diff(t)))


def _ranges(numbers: list[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``"1-3, 5"``."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def short_epochs_note(epochs: list[tuple[tuple[float, Any], tuple[float, Any]]],
                      epoch_j: list[float | None]) -> str | None:
    """The note for ``energy_per_epoch_j`` when some epochs with a J figure lasted under ``MIN_WINDOW_S``: each is
    the difference of two energy-counter reads (or a few power samples), and the counter's update interval
    (~20-100 ms) is a large share of a 0.3-0.5 s epoch, so that epoch's J is coarse even when the summed window is
    long. ``epochs``: (start edge, end edge) per epoch, an edge (t s, counter mJ); ``epoch_j`` its J per epoch.
    None when no such epoch."""
    short = [(i + 1, b[0] - a[0]) for i, ((a, b), j) in enumerate(zip(epochs, epoch_j, strict=True))
             if j is not None and b[0] - a[0] < MIN_WINDOW_S]
    if not short:
        return None
    lo, hi = min(s for _, s in short), max(s for _, s in short)
    span = f"{lo:.2f} s" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}-{hi:.2f} s"
    return (f"energy_per_epoch_j: epoch(s) {_ranges([i for i, _ in short])} of {len(epochs)} lasted {span}, under "
            f"{MIN_WINDOW_S:g} s: the energy counter's update interval (~20-100 ms) is a large share of each, so "
            f"their own J are coarse; energy_j / j_per_epoch sum or average them over the window")


class CpuMeter:
    """CPU utilisation of this process (all threads) over a window, in % of one core."""

    def __init__(self, clock: Callable[[], float]):
        self._clock = clock
        self._t0: float | None = None
        self._c0: float | None = None

    @staticmethod
    def _cpu_s() -> float:
        t = os.times()
        return t.user + t.system

    def start(self) -> None:
        self._t0, self._c0 = self._clock(), self._cpu_s()

    def stop(self) -> float | None:
        if self._t0 is None or self._c0 is None:
            return None
        wall = self._clock() - self._t0
        return 100.0 * (self._cpu_s() - self._c0) / wall if wall > 0 else None


class Telemetry:
    """NVML sampler for one GPU. Use ``for_device`` to get one; it never raises during a cell.

    Args:
        nvml: the ``pynvml`` module (tests inject a fake one).
        index: NVML index or UUID of the GPU.
        interval_s: sampling period (s).
        clock: time source in seconds (the bench clock, so samples line up with step timestamps).
        sleep: how the idle measurement waits (tests pass a no-op that advances their clock).
        background: sample in a background thread; False leaves sampling to ``sample_once`` calls
            (tests drive it step by step).
    """

    def __init__(self, nvml, index: int | str = 0, interval_s: float = DEFAULT_INTERVAL_S,
                 clock: Callable[[], float] = time.perf_counter, sleep: Callable[[float], None] = time.sleep,
                 background: bool = True):
        self.nv, self.interval_s, self.clock, self.sleep = nvml, interval_s, clock, sleep
        self.background = background
        self.unsupported: dict[str, str] = {}
        self.samples: list[Sample] = []
        self.marks: list[tuple[float, int | None]] = []
        self.ends: list[tuple[float, int | None] | None] = []
        self.stopped_at: tuple[float, int | None] | None = None
        self.idle_power_w: float | None = None
        self.cpu_util_pct: float | None = None
        self.cpu = CpuMeter(clock)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.handle = device_handle(nvml, index)
        self.name = _text(nvml.nvmlDeviceGetName(self.handle))
        self.index = index
        self.power_source = self._probe_power_source()
        self.arch = self._architecture()

    # ---- reads; each records why a metric is missing, once ------------------------------------------
    def _read(self, metric: str, fn: Callable[[], Any]) -> Any:
        if metric in self.unsupported:
            return None
        try:
            return fn()
        except Exception as e:  # NotSupported, FunctionNotFound, NoPermission...: null with reason
            self.unsupported[metric] = describe_error(e) or type(e).__name__
            return None

    def _probe_power_source(self) -> str | None:
        fi = getattr(self.nv, "NVML_FI_DEV_POWER_INSTANT", None)
        if fi is not None:
            try:
                v = self.nv.nvmlDeviceGetFieldValues(self.handle, [fi])[0]
                if int(v.nvmlReturn) == 0:
                    return "instant"
            except Exception:  # older driver: fall back to the averaged reading
                pass
        return "average"

    def _architecture(self) -> int | None:
        """NVML's architecture number of the GPU (None where the driver does not say)."""
        try:
            arch = int(self.nv.nvmlDeviceGetArchitecture(self.handle))
        except Exception:  # FunctionNotFound on old drivers, or a fake without it
            return None
        return None if arch == getattr(self.nv, "NVML_DEVICE_ARCH_UNKNOWN", 0xFFFFFFFF) else arch

    def _power_w(self) -> float:
        if self.power_source == "instant":
            v = self.nv.nvmlDeviceGetFieldValues(self.handle, [self.nv.NVML_FI_DEV_POWER_INSTANT])[0]
            if int(v.nvmlReturn) == 0:
                return v.value.uiVal / 1000.0
        return self.nv.nvmlDeviceGetPowerUsage(self.handle) / 1000.0

    def energy_mj(self) -> int | None:
        return self._read("energy", lambda: int(self.nv.nvmlDeviceGetTotalEnergyConsumption(self.handle)))

    def sample_once(self) -> Sample:
        """Take one reading of every metric and keep it."""
        nv, h = self.nv, self.handle
        util = self._read("utilization", lambda: nv.nvmlDeviceGetUtilizationRates(h))
        mem = self._read("memory", lambda: nv.nvmlDeviceGetMemoryInfo(h))
        s = Sample(
            t=self.clock(),
            gpu_util_pct=None if util is None else float(util.gpu),
            mem_util_pct=None if util is None else float(util.memory),
            memory_used_bytes=None if mem is None else int(mem.used),
            power_w=self._read("power", self._power_w),
            sm_clock_mhz=self._read("sm_clock", lambda: float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))),
            mem_clock_mhz=self._read("mem_clock", lambda: float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM))),
            temperature_c=self._read("temperature", lambda: float(
                nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))),
            clocks_event_reasons=self._read("clocks_event_reasons", lambda: int(
                nv.nvmlDeviceGetCurrentClocksEventReasons(h))),
            energy_mj=self.energy_mj(),
        )
        with self._lock:
            self.samples.append(s)
        return s

    # ---- window ---------------------------------------------------------------------------------------
    def measure_idle(self, duration_s: float = IDLE_WINDOW_S) -> float | None:
        """Mean power (W) over ``duration_s`` before the workload runs; kept as ``idle_power_w``."""
        readings = []
        end = self.clock() + duration_s
        while True:
            p = self._read("power", self._power_w)
            if p is None:
                break
            readings.append(p)
            if self.clock() >= end:
                break
            self.sleep(self.interval_s)
        self.idle_power_w = float(np.mean(readings)) if readings else None
        return self.idle_power_w

    def mark(self) -> None:
        """Window edge at the start of an epoch (call after a device barrier). The first opens the window."""
        if not self.marks:
            self.cpu.start()
        self.marks.append((self.clock(), self.energy_mj()))
        self.ends.append(None)
        self.sample_once()
        if self.background and self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="nvml-sampler", daemon=True)
            self._thread.start()

    def end_epoch(self) -> None:
        """Edge after the epoch's last training step (call after a device barrier): what follows until the
        next mark (validation) is outside the window. A second call in the same epoch does nothing."""
        if self.marks and self.ends[-1] is None and self.stopped_at is None:
            self.sample_once()
            self.ends[-1] = (self.clock(), self.energy_mj())

    def intervals(self) -> list[tuple[tuple[float, int | None], tuple[float, int | None]]]:
        """(start edge, end edge) of each epoch's training steps; an edge is (t s, energy counter mJ)."""
        if self.stopped_at is None:
            return []
        nxt = [*self.marks[1:], self.stopped_at]
        return [(m, e if e is not None else n) for m, e, n in zip(self.marks, self.ends, nxt, strict=True)]

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample_once()

    def stop(self) -> None:
        """Close the window (call after a device barrier). Safe to call twice or without a mark."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        if self.marks and self.stopped_at is None:
            self.sample_once()
            self.stopped_at = (self.clock(), self.energy_mj())
            self.cpu_util_pct = self.cpu.stop()

    # ---- summary --------------------------------------------------------------------------------------
    def summary(self, steps_per_epoch: int | None, examples_per_epoch: int | None) -> dict[str, Any]:
        """The record's ``telemetry`` block (see ``FIELDS`` in bench.results.record for every key)."""
        out = empty_summary(None)
        out.update(available=True, reason=None, gpu_name=self.name, gpu_index=self.index,
                   interval_s=self.interval_s, power_source=self.power_source, idle_power_w=self.idle_power_w)
        if not self.marks or self.stopped_at is None:
            out.update(available=False, reason="no timed window was recorded")
            return out
        epochs = self.intervals()
        steady = len(epochs) >= 2
        used = epochs[1:] if steady else epochs
        window = [s for s in self.samples if any(a[0] <= s.t <= b[0] for a, b in used)]
        out["window"] = "epochs 2..N" if steady else "whole run (one epoch)"
        out["window_s"] = sum(b[0] - a[0] for a, b in used)
        out["samples"] = len(window)
        for key in SUMMARISED:
            out[key] = stats([getattr(s, key) for s in window if getattr(s, key) is not None])
        memory = [s.memory_used_bytes for s in self.samples if s.memory_used_bytes is not None]
        out["memory_used_peak_bytes"] = max(memory) if memory else None
        out.update(self._throttle(window))
        out.update(self._energy(epochs, steady, steps_per_epoch, examples_per_epoch))
        out["cpu_util_pct"] = self.cpu_util_pct
        notes = []
        if out["window_s"] < MIN_WINDOW_S:
            notes.append(f"window {out['window_s']:.2f} s is shorter than {MIN_WINDOW_S:g} s: energy counter "
                         f"resolution (~20-100 ms) makes J figures coarse")
        short = short_epochs_note(epochs, out["energy_per_epoch_j"])
        if short:
            notes.append(short)
        if self.power_source == "average":
            notes.append(averaged_power_note(self.name, self.arch))
        out["notes"] = notes
        out["unsupported"] = dict(self.unsupported)
        return out

    def _throttle(self, window: list[Sample]) -> dict[str, Any]:
        masks = [s.clocks_event_reasons for s in window if s.clocks_event_reasons is not None]
        if not masks:
            return {"throttled": None, "throttle_reasons": None, "throttle_fraction": None,
                    "power_capped_fraction": None}
        bits = {name: getattr(self.nv, f"nvmlClocksEventReason{name}", 0) for name in THROTTLE_REASONS}
        thermal_hw = [b for n, b in bits.items() if b and n not in POWER_CAP_REASONS]
        cap = [b for n, b in bits.items() if b and n in POWER_CAP_REASONS]
        hit = [m for m in masks if any(m & b for b in thermal_hw)]
        capped = [m for m in masks if any(m & b for b in cap)]
        seen = sorted({n for n, b in bits.items() if b and any(m & b for m in masks)})
        return {"throttled": bool(hit), "throttle_reasons": seen, "throttle_fraction": len(hit) / len(masks),
                "power_capped_fraction": len(capped) / len(masks)}

    def _energy(self, epochs, steady: bool, steps_per_epoch, examples) -> dict[str, Any]:
        """Energy over the training steps of the used epochs: counter deltas between each epoch's edges,
        and integrated sampled power over the same intervals (validation between them excluded)."""
        used = epochs[1:] if steady else epochs
        counter = [counter_energy_j([a, b]) if a[1] is not None and b[1] is not None
                   else (None, "no energy-counter reading at an epoch edge") for a, b in used]
        failed = [n for j, n in counter if j is None]
        counter_j = None if failed else sum(j for j, _ in counter if j is not None)  # none is None unless failed
        note = failed[0] if failed else next((n for _, n in counter if n), None)  # e.g. "wrapped"
        integrated = [integrated_energy_j(self.samples, a[0], b[0]) for a, b in used]
        known = [j for j in integrated if j is not None]
        integrated_j = sum(known) if len(known) == len(integrated) else None
        epochs_j = []
        for a, b in epochs:
            j = counter_energy_j([a, b])[0] if a[1] is not None and b[1] is not None else None
            epochs_j.append(j if j is not None else integrated_energy_j(self.samples, a[0], b[0]))
        energy = counter_j if counter_j is not None else integrated_j
        method = None if energy is None else "counter" if counter_j is not None else "integrated_power"
        per_epoch = [j for j in (epochs_j[1:] if steady else epochs_j) if j is not None]
        j_epoch = float(np.mean(per_epoch)) if per_epoch else None
        # above idle (MLPerf power's convention, mlcommons/inference #2558): what the work added to the
        # power the GPU draws doing nothing, over the same window
        idle = self.idle_power_w
        epoch_s = float(np.mean([b[0] - a[0] for a, b in used])) if used else None
        above_epoch = j_epoch - idle * epoch_s if j_epoch is not None and idle is not None and epoch_s else None
        return {
            "energy_j": energy,
            "energy_method": method,
            "energy_counter_j": counter_j,
            "energy_integrated_j": integrated_j,
            "energy_note": note,
            "energy_counter_vs_integrated": counter_j / integrated_j if counter_j and integrated_j else None,
            "energy_per_epoch_j": epochs_j,
            "j_per_epoch": j_epoch,
            "j_per_step": j_epoch / steps_per_epoch if j_epoch and steps_per_epoch else None,
            "examples_per_j": examples / j_epoch if j_epoch and examples else None,
            "energy_above_idle_j": (energy - idle * sum(b[0] - a[0] for a, b in used)
                                    if energy is not None and idle is not None else None),
            "j_per_step_above_idle": above_epoch / steps_per_epoch if above_epoch is not None and steps_per_epoch
            else None,
        }

    def write_samples(self, path: Path) -> None:
        """Raw samples as CSV (columns: ``SAMPLE_FIELDS``)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=SAMPLE_FIELDS)
            w.writeheader()
            w.writerows(asdict(s) for s in self.samples)
        tmp.replace(path)


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def empty_summary(reason: str | None) -> dict[str, Any]:
    """The telemetry block with every field null and ``reason`` (a CPU run, no NVML...)."""
    out: dict[str, Any] = {"available": False, "reason": reason, "gpu_name": None, "gpu_index": None,
                           "interval_s": None, "power_source": None, "idle_power_w": None, "window": None,
                           "window_s": None, "samples": 0, "memory_used_peak_bytes": None,
                           "throttled": None, "throttle_reasons": None, "throttle_fraction": None,
                           "power_capped_fraction": None, "energy_above_idle_j": None,
                           "j_per_step_above_idle": None,
                           "energy_j": None, "energy_method": None, "energy_counter_j": None,
                           "energy_integrated_j": None, "energy_note": None,
                           "energy_counter_vs_integrated": None, "energy_per_epoch_j": [],
                           "j_per_epoch": None, "j_per_step": None, "examples_per_j": None,
                           "cpu_util_pct": None, "notes": [], "unsupported": {}}
    for key in SUMMARISED:
        out[key] = stats([])
    return out


class NullTelemetry:
    """Stand-in when there is no GPU or no NVML: same protocol, GPU fields null with ``reason``;
    the process's CPU utilisation is still measured."""

    def __init__(self, reason: str, clock: Callable[[], float] = time.perf_counter):
        self.reason = reason
        self.cpu = CpuMeter(clock)
        self.started = False
        self.cpu_util_pct: float | None = None
        self.samples: list[Sample] = []

    def measure_idle(self, duration_s: float = IDLE_WINDOW_S) -> None:
        return None

    def mark(self) -> None:
        if not self.started:
            self.started = True
            self.cpu.start()

    def end_epoch(self) -> None:
        return None

    def stop(self) -> None:
        if self.started and self.cpu_util_pct is None:
            self.cpu_util_pct = self.cpu.stop()

    def summary(self, steps_per_epoch: int | None, examples_per_epoch: int | None) -> dict[str, Any]:
        return {**empty_summary(self.reason), "cpu_util_pct": self.cpu_util_pct}

    def write_samples(self, path: Path) -> None:
        return None


def for_device(device: str, nvml=None, **kwargs) -> Telemetry | NullTelemetry:
    """A sampler for the cell's GPU, or a ``NullTelemetry`` saying why there is none. Never raises.

    Args:
        device: ``gpu`` or ``cpu``. nvml: a pynvml-compatible module (default: import ``pynvml``).
        kwargs: passed to ``Telemetry`` (interval_s, clock, sleep, index).
    """
    if device != "gpu":
        return NullTelemetry("CPU run: no GPU telemetry")
    try:
        nvml = init(nvml)
    except Exception as e:
        return NullTelemetry(f"NVML unavailable: {describe_error(e)}")
    kwargs.setdefault("index", nvml_index())
    try:
        return Telemetry(nvml, **kwargs)
    except Exception as e:
        shutdown(nvml)
        return NullTelemetry(f"NVML device query failed: {describe_error(e)}")

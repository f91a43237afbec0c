"""The NVML sampler of the cell's GPU (``Telemetry``), its stand-in without one (``NullTelemetry``) and
``for_device``, which picks; the window protocol is in ``bench.instruments.telemetry``'s docstring."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.instruments.nvml import Gpu, describe_error, init, nvml_index, shutdown
from bench.instruments.telemetry.cpu import CpuMeter
from bench.instruments.telemetry.energy import MIN_WINDOW_S, counter_energy_j, integrated_energy_j, short_epochs_note
from bench.instruments.telemetry.power_source import averaged_power_note
from bench.instruments.telemetry.samples import SUMMARISED, Sample, empty_summary, stats, write_samples

DEFAULT_INTERVAL_S = 0.1
IDLE_WINDOW_S = 1.0

#: Clock-event reasons that mean the GPU slowed itself for heat or power (names without the prefix).
THROTTLE_REASONS = ("HwSlowdown", "HwThermalSlowdown", "HwPowerBrakeSlowdown", "SwThermalSlowdown", "SwPowerCap")
#: SwPowerCap (clocks held down to stay under the power limit) is the normal state of a loaded A100/H100, so it
#: is reported as its own share of samples (``power_capped_fraction``); ``throttled`` comes from the others.
POWER_CAP_REASONS = ("SwPowerCap",)


class Telemetry:
    """NVML sampler for one GPU. Use ``for_device`` to get one; it never raises during a cell.

    Args:
        nvml: the initialised ``pynvml`` module (tests inject a fake one), read through ``bench.instruments.nvml.Gpu``.
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
        self.instant_reads = self.instant_missed = 0  # instant power reads; those without a value (``_power_w``)
        self.cpu_util_pct: float | None = None
        self.cpu = CpuMeter(clock)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.gpu = Gpu(nvml, index)
        self.name = self.gpu.name()
        self.index = index
        self.power_source = self._probe_power_source()
        self.arch = self.gpu.architecture()

    # ---- reads; each records why a metric is missing, once ------------------------------------------
    def _read(self, metric: str, fn: Callable[[], Any]) -> Any:
        if metric in self.unsupported:
            return None
        try:
            return fn()
        except Exception as e:  # NotSupported, FunctionNotFound, NoPermission...: null with reason
            self.unsupported[metric] = describe_error(e) or type(e).__name__
            return None

    def _probe_power_source(self, tries: int = 3) -> str:
        """``instant`` where NVML gives ``NVML_FI_DEV_POWER_INSTANT`` a value on this GPU in one of ``tries`` reads
        (a single read may come back without one), else ``average``."""
        for _ in range(tries):
            try:
                if self.gpu.instant_power_mw() is not None:
                    return "instant"
            except Exception:  # a driver older than the field: the averaged reading
                return "average"
        return "average"

    def _power_w(self) -> float | None:
        """Board power now (W) from the source probed at start, never a mix: where the instant field comes back
        without a value for one sample, that sample's power is None (left out of the power statistics and the
        integrated energy) and counted in ``instant_missed``, which the summary's notes report."""
        if self.power_source == "average":
            return self.gpu.power_usage_mw() / 1000.0
        mw = self.gpu.instant_power_mw()
        with self._lock:  # the sampler thread and the main thread's edge readings both count
            self.instant_reads += 1
            self.instant_missed += mw is None
        return None if mw is None else mw / 1000.0

    def energy_mj(self) -> int | None:
        """The energy counter (mJ), or None with the reason kept in ``unsupported``."""
        return self._read("energy", self.gpu.energy_mj)

    def sample_once(self) -> Sample:
        """Take one reading of every metric and keep it."""
        gpu = self.gpu
        util = self._read("utilization", gpu.utilization_pct)
        mem = self._read("memory", gpu.memory_used_bytes)
        s = Sample(
            t=self.clock(),
            gpu_util_pct=None if util is None else util[0],
            mem_util_pct=None if util is None else util[1],
            memory_used_bytes=mem,
            power_w=self._read("power", self._power_w),
            sm_clock_mhz=self._read("sm_clock", gpu.sm_clock_mhz),
            mem_clock_mhz=self._read("mem_clock", gpu.mem_clock_mhz),
            temperature_c=self._read("temperature", gpu.temperature_c),
            clocks_event_reasons=self._read("clocks_event_reasons", gpu.clocks_event_reasons),
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
            if "power" in self.unsupported:
                break
            if p is not None:
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
        gaps = self._power_gaps(window)
        if gaps:
            notes.append(gaps)
        out["notes"] = notes
        out["unsupported"] = dict(self.unsupported)
        return out

    def _power_gaps(self, window: list[Sample]) -> str | None:
        """The note on instant power readings that came back without a value (``_power_w``), or None: how many of
        the window's samples have no power, and of all readings (idle, edges and validation included)."""
        if not self.instant_missed or "power" in self.unsupported:
            return None
        missed = sum(s.power_w is None for s in window)
        return (f"{missed} of the window's {len(window)} power samples ({self.instant_missed} of {self.instant_reads} "
                "readings in all, idle included) came back from NVML_FI_DEV_POWER_INSTANT without a value: the power "
                "statistics and the idle power leave them out, the integrated energy interpolates across them "
                "(an epoch with fewer than two makes it null)")

    def _throttle(self, window: list[Sample]) -> dict[str, Any]:
        masks = [s.clocks_event_reasons for s in window if s.clocks_event_reasons is not None]
        if not masks:
            return {"throttled": None, "throttle_reasons": None, "throttle_fraction": None,
                    "power_capped_fraction": None}
        bits = {name: self.gpu.event_reason_bit(name) for name in THROTTLE_REASONS}
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
        write_samples(self.samples, path)


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

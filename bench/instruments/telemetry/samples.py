"""One telemetry reading (``Sample``), the CSV of a window's readings, and the statistics and empty form of the
record's ``telemetry`` block."""

from __future__ import annotations

import csv
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np


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


def write_samples(samples: list[Sample], path: Path) -> None:
    """``samples`` as CSV at ``path`` (columns: ``SAMPLE_FIELDS``), written to a temporary file and renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=SAMPLE_FIELDS)
        w.writeheader()
        w.writerows(asdict(s) for s in samples)
    tmp.replace(path)


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

"""Energy (J) over a timed window: the total-energy counter's deltas (unwrapped), the integral of sampled power,
and the note for epochs too short for the counter's resolution."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.instruments.telemetry.samples import Sample

#: The energy counter is an unsigned 64-bit count of millijoules.
ENERGY_COUNTER_MODULUS = 2**64
#: A counter step larger than this (J per second of wall time) cannot be real energy: a reset, not a wrap.
MAX_PLAUSIBLE_W = 5000.0
#: The counter updates every ~20-100 ms (docs/platform.md, "NVML": NVML's API reference gives no update interval for
#: ``nvmlDeviceGetTotalEnergyConsumption``; Yang et al., "Part-time Power Measurements", arXiv:2312.02741, measured
#: the A100/H100 sensor's power updating every 100 ms); a window, or an epoch's own J, shorter than this gets a note.
MIN_WINDOW_S = 1.0


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

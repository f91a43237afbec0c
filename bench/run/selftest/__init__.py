"""``bench selftest``: the harness checks its own instruments on this device before it measures anything.

Each check measures one quantity two ways: ours, through the harness's own code path (``EpochTimer`` and the
frameworks' barriers, ``gemm_tflops``, ``set_tf32`` / ``tf32_math``, the telemetry window, ``device_peak_bytes``,
``worker.add_mfu``), and an independent one (CUDA events, blocking on outputs, a float64 reference, NVML read
directly), and gives the two numbers, their ratio and a verdict against a stated tolerance. Modules:
``checks`` (the checks, run inside one framework's child process), ``independent`` (the independent side, per
framework), ``run`` (the parent: one child process per framework and TF32 setting, the table, the JSON file).
The checks, their tolerances and the reasons for them: docs/selftest.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PASS, FAIL, NA = "pass", "fail", "n/a"


@dataclass
class Result:
    """One check's outcome.

    ``measured``: the harness's own reading (ours); ``reference``: the independent one, in ``unit``; ``ratio``:
    measured / reference; ``tolerance``: the allowed relative deviation of the ratio from 1 (``within``) or above 1
    (``at_most``); ``verdict``: ``pass``, ``fail`` or ``n/a``; ``reason``: what was compared, or why it could not be.
    """

    check: str
    framework: str | None
    measured: float | None
    reference: float | None
    unit: str
    ratio: float | None
    tolerance: float | None
    verdict: str
    reason: str


def na(check: str, framework: str | None, reason: str, unit: str = "") -> Result:
    """A check that cannot run here (no GPU, no NVML, framework missing), with the reason."""
    return Result(check, framework, None, None, unit, None, None, NA, reason)


def failed(check: str, framework: str | None, reason: str, unit: str = "") -> Result:
    """A check that could not produce its numbers although it should have (a crash, a timeout)."""
    return Result(check, framework, None, None, unit, None, None, FAIL, reason)


def _ratio(measured: float | None, reference: float | None) -> float | None:
    ok = measured is not None and reference not in (None, 0) and math.isfinite(measured)
    return measured / reference if ok else None  # type: ignore[operator]


def within(check: str, framework: str | None, measured: float | None, reference: float | None, unit: str,
           tolerance: float, what: str) -> Result:
    """Pass when measured / reference lies in [1 - tolerance, 1 + tolerance]; fail otherwise or when a number is
    missing or not finite. ``what``: one line saying what the two numbers are."""
    r = _ratio(measured, reference)
    verdict = PASS if r is not None and abs(r - 1.0) <= tolerance else FAIL
    return Result(check, framework, measured, reference, unit, r, tolerance, verdict, what)


def at_most(check: str, framework: str | None, measured: float | None, reference: float | None, unit: str,
            tolerance: float, what: str) -> Result:
    """Pass when measured / reference <= 1 + tolerance (a bound, e.g. a datasheet peak); fail above it or when a
    number is missing."""
    r = _ratio(measured, reference)
    verdict = PASS if r is not None and r <= 1.0 + tolerance else FAIL
    return Result(check, framework, measured, reference, unit, r, tolerance, verdict, what)

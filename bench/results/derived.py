"""Metrics derived from other metrics, one formula each. The worker computes them for one run; the aggregation of
repeats (``bench.results.repeats``) recomputes them from the aggregated inputs, so a row's MFU, throughput and TFLOP/s
always belong to its own ms/step and never come from one repeat beside another repeat's time.

Standard library only: the runner imports it.
"""

from __future__ import annotations

from typing import Any


def step_throughput(metrics: dict[str, Any], batch_size: int, generated_tokens: int | None) -> None:
    """Step-timed cells (paper suite): ``examples_per_s`` = batch / mean step time (the timed steps' examples over
    their total time), and ``tokens_per_s`` = that x tokens generated per sequence (generate; None otherwise)."""
    ms = metrics.get("ms_per_step_mean")
    rate = 1000.0 * batch_size / ms if ms and batch_size else None
    metrics["examples_per_s"] = rate
    metrics["tokens_per_s"] = rate * generated_tokens if rate and generated_tokens else None


def fit_throughput(metrics: dict[str, Any], n_train: int | None) -> None:
    """Fit cells: ``samples_per_s`` = training examples per epoch / mean steady epoch (s); None with one epoch."""
    steady = metrics.get("steady_epoch_s")
    metrics["samples_per_s"] = n_train / steady if n_train and steady else None


def flops_rates(metrics: dict[str, Any]) -> None:
    """``achieved_tflops`` = FLOPs per step / mean step time (TFLOP/s); ``mfu`` and ``mfu_measured`` = that over
    ``peak_flops`` and ``measured_peak_flops`` (FLOP/s); None where an input is missing."""
    fl, ms = metrics.get("flops_per_step"), metrics.get("ms_per_step_mean")
    rate = fl / (ms / 1000.0) if fl and ms else None
    metrics["achieved_tflops"] = rate / 1e12 if rate else None
    for key, peak in (("mfu", "peak_flops"), ("mfu_measured", "measured_peak_flops")):
        metrics[key] = rate / metrics[peak] if rate and metrics.get(peak) else None


def energy_rates(metrics: dict[str, Any], examples_per_epoch: int | None) -> None:
    """``examples_per_j`` = examples per epoch / ``j_per_epoch`` (J): fit cells' training set, step-timed cells' batch x
    timed steps (the telemetry window's examples, ``bench.run.telemetry.sampler.Telemetry.summary``); None without
    either."""
    j = metrics.get("j_per_epoch")
    metrics["examples_per_j"] = examples_per_epoch / j if examples_per_epoch and j else None


def examples_per_epoch(rec: dict[str, Any]) -> int | None:
    """The examples of one timed epoch: a fit cell's ``data.n_train``; a step-timed cell's batch x ``metrics.steps``
    (its one timed "epoch" is the timed steps)."""
    m = rec.get("metrics") or {}
    if "examples_per_s" in m:  # a step-timed cell
        return (rec.get("batch_size") or 0) * (m.get("steps") or 0) or None
    return (rec.get("data") or {}).get("n_train")


def rederive(rec: dict[str, Any]) -> None:
    """Recompute every derived metric (declared with rule ``derived`` in ``bench.results.schema``) of an ``ok``
    record from its (aggregated) inputs, in place; a derived metric the record never had stays absent."""
    m = rec.get("metrics") or {}
    if "examples_per_s" in m:  # a step-timed cell
        step_throughput(m, rec.get("batch_size") or 0, (rec.get("settings") or {}).get("generated_tokens"))
    if "samples_per_s" in m:  # a fit cell
        fit_throughput(m, (rec.get("data") or {}).get("n_train"))
    if "achieved_tflops" in m or "flops_per_step" in m:
        flops_rates(m)
    if "examples_per_j" in m:
        energy_rates(m, examples_per_epoch(rec))

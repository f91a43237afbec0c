"""Metrics derived from other metrics, one formula each. The worker computes them for one run; the aggregation of
repeats (``bench.results.repeats``) recomputes them from the aggregated inputs, so a row's MFU, throughput and TFLOP/s
always belong to its own ms/step and never come from one repeat beside another repeat's time.

Each formula sets its fields on the record's typed ``Metrics`` block (``bench.results.schema``), so they count as
given (``model_fields_set``) and are written with the block.
"""

from __future__ import annotations

from bench.results.schema import Metrics, Record


def step_throughput(metrics: Metrics, batch_size: int, generated_tokens: int | None) -> None:
    """Step-timed cells (paper suite): ``examples_per_s`` = batch / mean step time (the timed steps' examples over
    their total time), and ``tokens_per_s`` = that x tokens generated per sequence (generate; None otherwise)."""
    ms = metrics.ms_per_step_mean
    rate = 1000.0 * batch_size / ms if ms and batch_size else None
    metrics.examples_per_s = rate
    metrics.tokens_per_s = rate * generated_tokens if rate and generated_tokens else None


def fit_throughput(metrics: Metrics, n_train: int | None) -> None:
    """Fit cells: ``samples_per_s`` = training examples per epoch / mean steady epoch (s); None with one epoch."""
    steady = metrics.steady_epoch_s
    metrics.samples_per_s = n_train / steady if n_train and steady else None


def flops_rates(metrics: Metrics) -> None:
    """``achieved_tflops`` = FLOPs per step / mean step time (TFLOP/s); ``mfu`` and ``mfu_measured`` = that over
    ``peak_flops`` and ``measured_peak_flops`` (FLOP/s); None where an input is missing."""
    fl, ms = metrics.flops_per_step, metrics.ms_per_step_mean
    rate = fl / (ms / 1000.0) if fl and ms else None
    metrics.achieved_tflops = rate / 1e12 if rate else None
    metrics.mfu = rate / metrics.peak_flops if rate and metrics.peak_flops else None
    metrics.mfu_measured = rate / metrics.measured_peak_flops if rate and metrics.measured_peak_flops else None


def energy_rates(metrics: Metrics, examples_per_epoch: int | None) -> None:
    """``examples_per_j`` = examples per epoch / ``j_per_epoch`` (J): fit cells' training set, step-timed cells' batch x
    timed steps (the telemetry window's examples, ``bench.instruments.telemetry.sampler.Telemetry.summary``); None
    without either."""
    j = metrics.j_per_epoch
    metrics.examples_per_j = examples_per_epoch / j if examples_per_epoch and j else None


def _has(metrics: Metrics, name: str) -> bool:
    """Whether the record holds the metric (given, a null included): a step-timed cell holds examples_per_s."""
    return name in metrics.model_fields_set


def examples_per_epoch(rec: Record) -> int | None:
    """The examples of one timed epoch: a fit cell's ``metrics.examples_per_epoch`` (what its epochs trained: an
    augmented epoch of full batches drops the partial one), else its ``data.n_train`` (a record from before that
    field); a step-timed cell's batch x ``metrics.steps`` (its one timed "epoch" is the timed steps)."""
    m = rec.metrics or Metrics()
    if _has(m, "examples_per_s"):  # a step-timed cell
        return (rec.batch_size or 0) * (m.steps or 0) or None
    if m.examples_per_epoch:
        return m.examples_per_epoch
    return rec.data.n_train if rec.data is not None else None


def rederive(rec: Record) -> None:
    """Recompute every derived metric (declared with rule ``derived`` in ``bench.results.schema``) of an ``ok``
    record from its (aggregated) inputs, in place; a derived metric the record never had stays absent."""
    m = rec.metrics
    if m is None:
        return
    if _has(m, "examples_per_s"):  # a step-timed cell
        step_throughput(m, rec.batch_size or 0, rec.settings.generated_tokens if rec.settings is not None else None)
    if _has(m, "samples_per_s"):  # a fit cell
        fit_throughput(m, examples_per_epoch(rec))
    if _has(m, "achieved_tflops") or _has(m, "flops_per_step"):
        flops_rates(m)
    if _has(m, "examples_per_j"):
        energy_rates(m, examples_per_epoch(rec))

"""The record's ``profile`` block: where a cell's time goes, from its framework's profiler over a few steady steps
after the timed measurement (``bench run --profile``; ``bench.instruments.profile``)."""

from __future__ import annotations

from typing import Any

from bench.core.opcategories import KEYS
from bench.results.schema.declare import Block, entry


class Profile(Block):
    """``profile``: repeat 1's profile of the cell, taken after its timed window (which it does not change)."""

    profiler: str | None = entry("the profiler and its framework's version (torch.profiler, jax.profiler, "
                                 "tf.profiler)")
    activities: list[str] | None = entry("what it recorded: cpu, cuda (torch.profiler); host, device (the XPlane "
                                         "profilers)")
    device: str | None = entry("whose work the categories count: gpu (kernels, copies, memsets on the device) or "
                               "cpu (the framework's ops on the host, each its self time)")
    warmup_steps: int | None = entry("steps run after the timed window and before the profiled ones, the profiler "
                                     "already running (its start-up costs fall on them, outside the window); Keras "
                                     "with steps_per_execution > 1: one whole call of settings.steps_per_call steps")
    steps: int | None = entry("steps inside the profiled window (Keras with steps_per_execution > 1: whole calls, "
                              "each of settings.steps_per_call steps, the timed fit's full calls; a multiple of it. "
                              "Where the epoch's steps are not a multiple of it, the timed epochs' shorter last call "
                              "is not among them, and a note says so)")
    steps_cap: int | None = entry("the most steps a profiled window holds (bench.instruments.profile.MAX_STEPS), "
                                  "except one Keras call of more steps (settings.steps_per_call > the cap)")
    execution_differs: str | None = entry("why the profiled steps execute otherwise than the timed ones, where the "
                                          "profiler changes that (XLA on a GPU runs its command buffers op by op "
                                          "under a profiler); null: no such change known")
    window_ms: float | None = entry("the profiled window as the trace times it (its annotation)", "ms")
    wall_ms: float | None = entry("the profiled window by the harness's clock, a device barrier at each edge", "ms")
    ms_per_step: float | None = entry("wall_ms / steps: a profiled step's time", "ms")
    slowdown: float | None = entry("ms_per_step over the cell's timed metrics.ms_per_step_p50: what the profiler "
                                   "costs a step where the timed steps ran as the profiled ones (null without a timed "
                                   "p50). Under metrics.sync step or every:N (the paper suite's step) the timed steps "
                                   "had a device barrier (Keras: and its logs read) after every step or N, which the "
                                   "profiled window has only at its edges; a Keras cell whose timed epochs ended in "
                                   "a shorter call than the profiled ones has a note saying so", "ratio")
    busy_ms: float | None = entry("time with the device's work running (the union of its intervals) in the window",
                                  "ms")
    device_busy_fraction: float | None = entry("busy_ms / window_ms", "fraction")
    host_fraction: float | None = entry("1 - device_busy_fraction: the window's share where the device waits for "
                                        "the host (launches, framework and Python overhead, the input's hand-over)",
                                        "fraction")
    op_ms: float | None = entry("the device's work summed (self times; concurrent work counts each part): the "
                                "categories sum to it", "ms")
    ops: int | None = entry("ops (kernels) counted")
    categories: dict[str, float] = entry("op time by category (ms; bench.core.opcategories: "
                                         + ", ".join(KEYS) + ")", "ms", default={})
    top_ops: list[dict[str, Any]] | None = entry("the ops with the most self time: name, category, calls, ms, share "
                                                 "(of op_ms)")
    other_ops: list[dict[str, Any]] | None = entry("every op no rule placed (category other): name, calls, ms")
    trace: str | None = entry("the Chrome trace (Perfetto, chrome://tracing), relative to the run directory")
    trace_bytes: int | None = entry("its size (gzipped)", "bytes")
    tensorboard: str | None = entry("jax.profiler, tf.profiler: the TensorBoard log directory holding the XSpace, "
                                    "relative to the run directory")
    tensorboard_bytes: int | None = entry("its size", "bytes")
    trace_limit_bytes: int | None = entry("the largest trace kept (trace and tensorboard together; "
                                          "bench.instruments.profile.MAX_TRACE_BYTES): a larger one is deleted, its "
                                          "sizes kept and warnings saying so", "bytes")
    warnings: list[str] | None = entry("what the profiler said went wrong ('error: ...', 'warning: ...': the XSpace's "
                                       "errors and warnings such as dropped CUPTI events, kineto's ERROR and WARNING "
                                       "such as a full activity buffer) and a trace not kept")
    cost_s: float | None = entry("the profile's cost inside the cell's process: its steps, the profiler, the "
                                 "trace written and summarised", "s")
    reason: str | None = entry("why there is no profile (the profiler failed; on a GPU, it recorded no device "
                               "activity; the timed numbers stand)")

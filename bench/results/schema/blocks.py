"""The record's blocks of timed results and of the cell's process: ``Stats``, ``Data``, ``Metrics``, ``Process``,
``Repeats``, ``Spread``, ``Model``, ``Memory``, ``Output`` (the engines return ``Metrics``, ``Model``, ``Memory`` and
``Output`` themselves)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import create_model

from bench.results.schema.declare import Block, entry, rule_of


class Stats(Block):
    """A telemetry quantity summarised over the timed window (``bench.instruments.telemetry.samples.stats``)."""

    mean: float | None = entry("mean over the window's samples")
    p50: float | None = entry("median over the window's samples")
    max: float | None = entry("maximum over the window's samples")


class Data(Block):
    """``data``: the data a cell trained or ran on."""

    source: str | None = entry("real (the published dataset) or synthetic (same shapes and dtypes, random values; "
                               "epoch suites: only at smoke size or when asked)")
    requested: str | None = entry("epoch suites: the --data policy (auto: real, synthetic only at smoke; real; "
                                  "synthetic)")
    reason: str | None = entry("why the data is what it is (synthetic: why; real: where it came from)")
    name: str | None = entry("the dataset's name")
    n_train: int | None = entry("training examples in the set (an epoch trains metrics.examples_per_epoch of them: "
                                "fewer where an augmented epoch of full batches drops the partial one)")
    n_val: int | None = entry("validation examples")
    sha256: str | None = entry("checksum of the dataset file (null where not checked)")


class Metrics(Block):
    """``metrics``: the timed results. The rule says how a repeated cell's row gets each one."""

    ms_per_step_mean: float | None = entry("mean wall time per step over steady epochs: total time / steps", "ms",
                                           "median")
    ms_per_step_p50: float | None = entry("median over the timed intervals' mean step times "
                                          "(metrics.ms_per_step_basis; null with fewer than two intervals)", "ms",
                                          "median")
    ms_per_step_p90: float | None = entry("90th percentile over the timed intervals' mean step times", "ms",
                                          "median")
    ms_per_step_std: float | None = entry("standard deviation over the timed intervals' mean step times", "ms",
                                          "median")
    ms_per_step_min: float | None = entry("fastest timed interval's mean step time", "ms", "median")
    ms_per_step_max: float | None = entry("slowest timed interval's mean step time", "ms", "median")
    ms_per_step_basis: str | None = entry("what one timed interval is: 'step', 'execution' (steps_per_execution > 1 "
                                          "under sync=step), 'window' (sync=every:N) or 'epoch' (sync=epoch)")
    executions: int | None = entry("how many steady intervals were timed")
    sync: str | None = entry("the timing cadence in effect (settings.sync: epoch, every:N or step)")
    barriers: int | None = entry("device barriers the timer made")
    clock_reads: int | None = entry("clock reads the timer made")
    epochs: int | None = entry("epochs run")
    steps_per_epoch: int | None = entry("training steps per epoch")
    examples_per_epoch: int | None = entry("epoch suites: training examples each epoch trained: data.n_train, less the "
                                           "partial batch an augmented epoch of full batches drops (cifar10_cnn at "
                                           "batch 32: 50,000 -> 49,984; null: a record from before 2026-11-27)")
    first_epoch_s: float | None = entry("the first epoch: includes tracing/compilation", "s", "median")
    steady_epoch_s: float | None = entry("mean time per epoch over epochs 2..N, training steps only", "s", "median")
    epoch_s: list[float] | None = entry("each epoch's training steps, the first included (JSON list)", "s")
    samples_per_s: float | None = entry("training examples per second over steady epochs: examples_per_epoch / "
                                        "steady_epoch_s (a record without examples_per_epoch: data.n_train; such an "
                                        "aggregated record of an augmented cell counted the partial batch its epochs "
                                        "dropped)", "examples/s", "derived")
    total_train_s: float | None = entry("training steps of all epochs, compilation included, validation excluded",
                                        "s", "median")
    fit_call_s: float | None = entry("epoch suites: wall time of the whole training call between device barriers, "
                                     "every epoch and each one's validation included. Keras: model.fit, its own setup "
                                     "before the first epoch included (the model built and compiled before it); the "
                                     "PyTorch/JAX twins: their loop from the first epoch's start to after the last "
                                     "validation (the model, the optimizer and the data placed before it)", "s",
                                     "median")
    fit_call_s_per_epoch: float | None = entry("epoch suites: fit_call_s / epochs, the 2017 Keras backend comparison's "
                                               "metric as its notebooks timed fit (%timeit of the whole call), over "
                                               "the epochs; schema 4 on", "s/epoch", "median")
    fit_epoch_s: list[float] | None = entry("epoch suites: each epoch's span, from its begin to after its validation, "
                                            "as Keras 2.0.8's progress bar timed it under verbose=1, a device "
                                            "barrier before each clock read (JSON list); not the 2017 metric", "s")
    fit_epoch_s_mean: float | None = entry("epoch suites: the mean of fit_epoch_s, the first epoch included; schema 4 "
                                           "on (schema 3 records with fit_epoch_s hold it as fit_s_per_epoch)", "s",
                                           "median")
    fit_s_per_epoch: float | None = entry("schema 3 and older only, no longer written: records with fit_epoch_s "
                                          "hold the mean of fit_epoch_s (now fit_epoch_s_mean), "
                                          "older ones the whole fit call / epochs (now fit_call_s_per_epoch)",
                                          "s/epoch", "median")
    first_step_s: float | None = entry("the first step alone, tracing, compilation and lazy initialisation included "
                                       "(the model is built before the clock starts; paper suite, and fit cells "
                                       "under sync=step; null otherwise, and where the first timed call ran several "
                                       "steps: Keras with steps_per_execution > 1 times an execution whole, its first "
                                       "step never alone; records before 2026-11-27 hold that execution's seconds "
                                       "over its steps)", "s", "median")
    graph_warmup_s: float | None = entry("PyTorch on a GPU under torch.compile's CUDA graph modes (reduce-overhead, "
                                         "max-autotune): the untimed calls run so that no CUDA graph is warmed up or "
                                         "recorded in a timed step (bench.models.engines.torch.settle). Epoch "
                                         "suites: after the first epoch's steps a forward and backward of each batch "
                                         "shape, twice, counted in first_epoch_s and total_train_s (compilation), "
                                         "then each validation shape, twice, in fit_epoch_s[0]; paper suite: the "
                                         "step once more after the first, in neither first_step_s nor a timed step; "
                                         "absent where none ran", "s", "median")
    steps: int | None = entry("the timed steps ms_per_step_* are over: paper suite, the steps after the first "
                              "(default 100); epoch suites, the steady epochs' training steps")
    steady_s: float | None = entry("paper suite: total time of the timed steps", "s", "median")
    examples_per_s: float | None = entry("paper suite: examples (sequences, images) per second over the timed "
                                         "steps: batch_size / ms_per_step_mean", "examples/s", "derived")
    tokens_per_s: float | None = entry("paper suite, generate: examples_per_s x settings.generated_tokens",
                                       "tokens/s", "derived")
    flops_per_step: float | None = entry("paper suite: model FLOPs of one step (null outside the table: smoke size, "
                                         "another sequence length)", "FLOP")
    flops_method: str | None = entry("how flops_per_step was counted")
    achieved_tflops: float | None = entry("flops_per_step / ms_per_step_mean", "TFLOP/s", "derived")
    peak_flops: float | None = entry("the GPU's dense peak for the math in effect, used for MFU", "FLOP/s")
    peak_source: str | None = entry("where peak_flops came from, or why it is null")
    mfu: float | None = entry("model FLOPs utilisation: flops_per_step / step time / peak_flops (null without a "
                              "known peak)", "fraction", "derived")
    measured_peak_flops: float | None = entry("the GEMM FLOP/s `make doctor` measured in this image on this GPU "
                                              "(matched by NVML UUID, else model name) under this driver and image "
                                              "(digest, else framework and CUDA library versions) for the math in "
                                              "effect", "FLOP/s")
    measured_peak_source: str | None = entry("where measured_peak_flops came from, or why it is null")
    mfu_measured: float | None = entry("flops_per_step / step time / measured_peak_flops (null + why)", "fraction",
                                       "derived")
    j_per_step: float | None = entry("energy per training step over the telemetry window (null without NVML)", "J",
                                     "median")
    j_per_epoch: float | None = entry("energy per steady epoch (null without NVML)", "J", "median")
    examples_per_j: float | None = entry("examples per joule: examples per epoch (fit: examples_per_epoch, a record "
                                         "without it data.n_train; paper suite: batch_size x steps) / j_per_epoch "
                                         "(null without NVML)", "examples/J", "derived")
    j_per_step_above_idle: float | None = entry("energy per step minus idle power x its time: what the work added "
                                                "to an idle GPU's draw (MLPerf power's convention)", "J", "median")


class Process(Block):
    """``process``: the cell's own process, as its runner saw it."""

    exit_code: int | None = entry("the worker process's exit status")
    wall_s: float | None = entry("wall time of the whole cell process, imports included (repeats.process_wall_s "
                                 "lists every repeat's)", "s")
    timeout_s: float | None = entry("the cell's wall-clock limit", "s")
    max_rss_bytes: int | None = entry("peak resident memory of the worker process, as its parent saw it", "bytes")
    log: str | None = entry("the worker's log file name")
    gpu_s: float | None = entry("GPU-seconds: the process's wall time on a GPU (0 on CPU; repeats.gpu_s sums the "
                                "repeats': the report's GPU-hours and cost)", "s", "sum")
    cpu_s: float | None = entry("the process's own CPU time, user + system, its waited-for children included "
                                "(os.wait4)", "s")
    other_cpu_s: float | None = entry("CPU time the host's other processes used while the cell ran: the host's busy "
                                      "CPU time over the process's life (psutil.cpu_times, host-wide in a container "
                                      "too) less cpu_s; good to a few 10 ms ticks per CPU (null: unreadable, or a "
                                      "record from before 2026-11-27)", "s")
    host_contended: bool | None = entry("other_cpu_s / wall_s reached half a CPU (or 5 % of the CPUs, the larger): "
                                        "the cell shared the CPUs, and its times are not comparable with a quiet "
                                        "host's (bench.instruments.hostload)", rule="any")


class Spread(Block):
    """``repeats.<metric>``: one metric across repeats (``bench.results.repeats.spread``)."""

    values: list[float] | None = entry("per-repeat values", rule="aggregation")
    median: float | None = entry("their median", rule="aggregation")
    min: float | None = entry("their minimum", rule="aggregation")
    max: float | None = entry("their maximum", rule="aggregation")
    cv: float | None = entry("coefficient of variation: sample std / mean (null for fewer than two values)",
                             "fraction", "aggregation")


#: One ``Spread`` field per metric with rule median or derived (``repeats.<metric>``), from ``Metrics``' declarations.
_SPREAD_METRICS = tuple(n for n, f in Metrics.model_fields.items() if rule_of(f) in ("median", "derived"))
if TYPE_CHECKING:  # mypy cannot see fields made at run time: code reads them with ``Repeats.spread``
    _Spreads: TypeAlias = Block
else:
    _Spreads = create_model("_Spreads", __base__=Block, **{
        n: (Spread | None, entry(f"metrics.{n} across repeats", rule="aggregation")) for n in _SPREAD_METRICS})


class Repeats(_Spreads):
    """``repeats``: the independent repeats of a cell and their spread (absent from a per-repeat record). Every
    metric with rule median or derived also gets ``repeats.<metric>`` (``Spread``)."""

    n: int | None = entry("number of independent repeats", rule="aggregation")
    ok: int | None = entry("how many repeats were ok", rule="aggregation")
    statuses: list[str] | None = entry("each repeat's status", rule="aggregation")
    rule: str | None = entry("the aggregation rule (median per metric, no best-of-N)", rule="aggregation")
    schedule: list[dict[str, Any]] | None = entry("rounds: each repeat's round and position", rule="aggregation")
    process_wall_s: list[float] | None = entry("each repeat's process wall time", "s", "aggregation")
    started_utc: list[str | None] | None = entry("each repeat's started_utc, in repeat order (the cell's own is "
                                                 "repeat 1's; records before this field: filled in by the collector "
                                                 "from the repeats' records on disk, where they are)",
                                                 rule="aggregation")
    finished_utc: list[str | None] | None = entry("each repeat's finished_utc, in repeat order (as started_utc)",
                                                  rule="aggregation")
    gpu_s: float | None = entry("GPU-seconds summed over the repeats", "s", "aggregation")

    def spread(self, metric: str) -> Spread | None:
        """``repeats.<metric>``: the spread of a metric with rule median or derived (None where it has none)."""
        value = getattr(self, metric, None) if metric in _SPREAD_METRICS else None
        return value if isinstance(value, Spread) else None


class Model(Block):
    """``model``: the model as the framework built it."""

    params_total: int | None = entry("parameter count as the framework reports it")
    params_trainable: int | None = entry("trainable parameter count")
    params_effective: int | None = entry("parameters in use where counted apart (e.g. tied weights once)")


class Memory(Block):
    """``memory``: peak memory."""

    host_peak_rss_bytes: int | None = entry("peak resident memory of the cell's own process", "bytes")
    device_peak_bytes: int | None = entry("peak device memory the framework allocated (null on CPU)", "bytes")


class Output(Block):
    """``output``: paper suite, the last step's output."""

    shapes: Any = entry("the shapes of the last step's output (predict: the model's, torch fit: the loss)")
    finite: bool | None = entry("it holds no NaN/Inf (a non-finite output fails the cell)")


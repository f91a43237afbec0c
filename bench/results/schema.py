"""The result record's declared schema: one dataclass per block, each field declared once with ``entry``.

A field's declaration gives its unit, its meaning and its rule across repeats (``RULES``). Everything that used to
restate the schema derives from here: ``bench fields`` (``describe``), the CSV's column order (``column_order``),
the metrics the aggregation of repeats takes as a median (``aggregated``) or recomputes (``derived_metrics``), the
report's column names (``col``: a declared field's dotted CSV column, or an error for an unknown one) and the
collector's validation (``problems``).

The record on disk keeps its JSON layout: nested blocks, dotted CSV columns (``metrics.ms_per_step_mean``).
Open-ended parts (``env.packages``, engine-specific settings, ``telemetry.unsupported``...) are declared as mappings;
keys a block does not declare are allowed and kept (a record carries them through, the CSV shows them).

Standard library only (``bench.results`` imports only ``bench.core``).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

from bench.core.knobs import SETTINGS

#: The record layout this code writes. 3: the layout is declared here (schema_version 2's records still load:
#: 3 only added fields and turned ``metrics.examples_per_j`` into a derived metric).
SCHEMA_VERSION = 3
#: The oldest layout the collector reads.
OLDEST_SCHEMA = 1

Rule = Literal["median", "first", "sum", "derived", "aggregation"]
#: What each rule across repeats means (``bench.results.repeats``).
RULES: dict[str, str] = {
    "median": "the median across repeats (values, median, min, max and cv kept in repeats.<field>)",
    "first": "repeat 1's value (or the first failing repeat's, for a cell that is not ok)",
    "sum": "summed over the repeats (in the repeats block)",
    "derived": "recomputed from the aggregated metrics (bench.results.derived), never carried from a repeat",
    "aggregation": "made by the aggregation of repeats itself (null or absent in a per-repeat record)",
}


def entry(help: str, unit: str = "", rule: Rule = "first", default: Any = None) -> Any:
    """A record field: its meaning (``help``), unit (``ms``, ``s``, ``J``, ``W``, ``bytes``, ``FLOP/s``...; empty for
    a label or a count) and rule across repeats (``RULES``), like ``bench.core.settings.knob`` declares a setting.
    ``default``: the value of an absent field (a mutable default is copied per instance)."""
    meta = {"help": help, "unit": unit, "rule": rule}
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


# ---- blocks the engines return: they write what was given -------------------------------------------------------

class Block:
    """Base of a block that code fills in (the engines' ``Metrics``, ``Model``, ``Memory``, ``Output``,
    ``EffectiveSettings``): it remembers which fields were given (constructor arguments, later assignments,
    ``update``) and holds the keys it does not declare in ``extra``, so that ``to_json`` writes the block's JSON
    as a dict would have: a null that was set stays a null, a field never set stays absent (records of schema 3
    keep their keys). Subclasses are decorated ``@given @dataclass``."""

    # set by @dataclass on each subclass; declared so that dataclasses.fields accepts a Block
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        given = self.__dict__.get("_given")
        if given is not None:
            given.add(name)

    @property
    def extra(self) -> dict[str, Any]:
        """Keys the block does not declare, in the order set (written after the declared ones)."""
        return self.__dict__.setdefault("_extra", {})

    def update(self, values: Mapping[str, Any]) -> None:
        """Set each key: a declared field as an attribute, any other key in ``extra``."""
        declared = {f.name for f in dataclasses.fields(self)}
        for key, value in values.items():
            if key in declared:
                setattr(self, key, value)
            else:
                self.extra[key] = value


_B = TypeVar("_B", bound=type[Block])


def given(cls: _B) -> _B:
    """Make a ``Block`` dataclass record which fields its constructor was given (apply on top of ``@dataclass``)."""
    init = cls.__init__
    names = [f.name for f in dataclasses.fields(cls)]

    @functools.wraps(init)
    def __init__(self: Block, *args: Any, **kwargs: Any) -> None:
        object.__setattr__(self, "_given", None)  # the generated __init__ sets every field: not all were given
        init(self, *args, **kwargs)
        object.__setattr__(self, "_given", {*names[:len(args)], *kwargs})

    setattr(cls, "__init__", __init__)  # noqa: B010  (replaces the dataclass's __init__ by its wrapper, on purpose)
    return cls


def to_json(block: Block) -> dict[str, Any]:
    """The JSON dict of ``block``: its given fields in declaration order (a nested ``Block`` as its own dict),
    then its ``extra`` keys. The one place the engines' typed blocks become the record's JSON."""
    given_names = block.__dict__.get("_given") or set()
    out: dict[str, Any] = {}
    for f in dataclasses.fields(block):
        if f.name in given_names:
            value = getattr(block, f.name)
            out[f.name] = to_json(value) if isinstance(value, Block) else value
    out.update(block.extra)
    return out


# ---- blocks ---------------------------------------------------------------------------------------------------

@dataclass
class Stats:
    """A telemetry quantity summarised over the timed window (``bench.run.telemetry.samples.stats``)."""

    mean: float | None = entry("mean over the window's samples")
    p50: float | None = entry("median over the window's samples")
    max: float | None = entry("maximum over the window's samples")


@dataclass
class Data:
    """``data``: the data a cell trained or ran on."""

    source: str | None = entry("real (the published dataset) or synthetic (same shapes and dtypes, random values; fit "
                               "suites: only at smoke size or when asked)")
    requested: str | None = entry("fit suites: the --data policy (auto: real, synthetic only at smoke; real; "
                                  "synthetic)")
    reason: str | None = entry("why the data is what it is (synthetic: why; real: where it came from)")
    name: str | None = entry("the dataset's name")
    n_train: int | None = entry("training examples per epoch")
    n_val: int | None = entry("validation examples")
    sha256: str | None = entry("checksum of the dataset file (null where not checked)")


@given
@dataclass
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
    first_epoch_s: float | None = entry("the first epoch: includes tracing/compilation", "s", "median")
    steady_epoch_s: float | None = entry("mean time per epoch over epochs 2..N, training steps only", "s", "median")
    epoch_s: list[float] | None = entry("each epoch's training steps, the first included (JSON list)", "s")
    samples_per_s: float | None = entry("training examples per second over steady epochs: data.n_train / "
                                        "steady_epoch_s", "examples/s", "derived")
    total_train_s: float | None = entry("training steps of all epochs, compilation included, validation excluded",
                                        "s", "median")
    fit_call_s: float | None = entry("fit suites: wall time of the whole training call between device barriers "
                                     "(Keras' model.fit; the PyTorch/JAX epoch loop): setup before the first epoch, "
                                     "every epoch and each one's validation included", "s", "median")
    fit_epoch_s: list[float] | None = entry("fit suites: each epoch as Keras 2.0.8's progress bar timed it, from "
                                            "the epoch's begin to after its validation, device barrier before each "
                                            "clock read (JSON list)", "s")
    fit_s_per_epoch: float | None = entry("fit suites: the mean of fit_epoch_s, first epoch included: the 2017 "
                                          "Keras backend comparison's metric", "s/epoch", "median")
    first_step_s: float | None = entry("the first step alone, tracing, compilation and lazy initialisation included "
                                       "(the model is built before the clock starts; paper suite, and fit cells "
                                       "under sync=step; null otherwise)", "s", "median")
    steps: int | None = entry("paper suite: timed steps after the first (default 100)")
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
                                              "(matched by NVML UUID, else model name) for the math in effect",
                                              "FLOP/s")
    measured_peak_source: str | None = entry("where measured_peak_flops came from, or why it is null")
    mfu_measured: float | None = entry("flops_per_step / step time / measured_peak_flops (null + why)", "fraction",
                                       "derived")
    j_per_step: float | None = entry("energy per training step over the telemetry window (null without NVML)", "J",
                                     "median")
    j_per_epoch: float | None = entry("energy per steady epoch (null without NVML)", "J", "median")
    examples_per_j: float | None = entry("examples per joule: examples per epoch (fit: data.n_train; paper suite: "
                                         "batch_size x steps) / j_per_epoch (null without NVML)", "examples/J",
                                         "derived")
    j_per_step_above_idle: float | None = entry("energy per step minus idle power x its time: what the work added "
                                                "to an idle GPU's draw (MLPerf power's convention)", "J", "median")


@dataclass
class Process:
    """``process``: the cell's own process, as its runner saw it."""

    exit_code: int | None = entry("the worker process's exit status")
    wall_s: float | None = entry("wall time of the whole cell process, imports included (repeats.process_wall_s "
                                 "lists every repeat's)", "s")
    timeout_s: float | None = entry("the cell's wall-clock limit", "s")
    max_rss_bytes: int | None = entry("peak resident memory of the worker process, as its parent saw it", "bytes")
    log: str | None = entry("the worker's log file name")
    gpu_s: float | None = entry("GPU-seconds: the process's wall time on a GPU (0 on CPU; repeats.gpu_s sums the "
                                "repeats': the report's GPU-hours and cost)", "s", "sum")


@dataclass
class Repeats:
    """``repeats``: the independent repeats of a cell and their spread (absent from a per-repeat record). Every
    metric with rule median or derived also gets ``repeats.<metric>`` (``Spread``)."""

    n: int | None = entry("number of independent repeats", rule="aggregation")
    ok: int | None = entry("how many repeats were ok", rule="aggregation")
    statuses: list[str] | None = entry("each repeat's status", rule="aggregation")
    rule: str | None = entry("the aggregation rule (median per metric, no best-of-N)", rule="aggregation")
    schedule: list[dict[str, Any]] | None = entry("rounds: each repeat's round and position", rule="aggregation")
    process_wall_s: list[float] | None = entry("each repeat's process wall time", "s", "aggregation")
    gpu_s: float | None = entry("GPU-seconds summed over the repeats", "s", "aggregation")


@dataclass
class Spread:
    """``repeats.<metric>``: one metric across repeats (``bench.results.repeats.spread``)."""

    values: list[float] | None = entry("per-repeat values", rule="aggregation")
    median: float | None = entry("their median", rule="aggregation")
    min: float | None = entry("their minimum", rule="aggregation")
    max: float | None = entry("their maximum", rule="aggregation")
    cv: float | None = entry("coefficient of variation: sample std / mean (null for fewer than two values)",
                             "fraction", "aggregation")


@given
@dataclass
class Model(Block):
    """``model``: the model as the framework built it."""

    params_total: int | None = entry("parameter count as the framework reports it")
    params_trainable: int | None = entry("trainable parameter count")
    params_effective: int | None = entry("parameters in use where counted apart (e.g. tied weights once)")


@given
@dataclass
class Memory(Block):
    """``memory``: peak memory."""

    host_peak_rss_bytes: int | None = entry("peak resident memory of the cell's own process", "bytes")
    device_peak_bytes: int | None = entry("peak device memory the framework allocated (null on CPU)", "bytes")


@given
@dataclass
class Output(Block):
    """``output``: paper suite, the last step's output."""

    shapes: Any = entry("the shapes of the last step's output (predict: the model's, torch fit: the loss)")
    finite: bool | None = entry("it holds no NaN/Inf (a non-finite output fails the cell)")


@dataclass
class Gpu:
    """``env.gpu``: the GPU as NVML sees it (``bench.run.environment.gpu_info``)."""

    available: bool | None = entry("NVML saw a GPU")
    reason: str | None = entry("why not")
    name: str | None = entry("the GPU's model name")
    uuid: str | None = entry("its NVML UUID (repeats on two GPUs fail the cell)")
    count: int | None = entry("GPUs visible")
    driver: str | None = entry("driver version")
    cuda_driver: Any = entry("CUDA version the driver supports")
    memory_total_bytes: int | None = entry("device memory", "bytes")
    mig_mode: bool | None = entry("the GPU is in MIG mode, or the cell's device is a MIG slice (a MIG-... UUID in "
                                  "CUDA_VISIBLE_DEVICES; null where NVML does not say); then a note says energy is "
                                  "the whole GPU's and MFU has no datasheet peak (null)")
    nvml_device: Any = entry("the NVML device index")


@dataclass
class CudaCache:
    """``env.cuda_cache``: the CUDA JIT cache (CUDA_CACHE_PATH, a compose volume) around the cell's process."""

    path: str | None = entry("CUDA_CACHE_PATH")
    maxsize: str | None = entry("CUDA_CACHE_MAXSIZE")
    bytes_before: int | None = entry("cache size before the cell's process started", "bytes")
    bytes_after: int | None = entry("cache size after it exited (the driver writes the cache at exit)", "bytes")
    jit_compiled: bool | None = entry("the cache grew: the driver JIT-compiled code during the cell (PTX for a GPU "
                                      "newer than a wheel's machine code, or runtime-compiled kernels), whose "
                                      "compile time may be inside the first step/epoch (null without the variable)")


@dataclass
class Env:
    """``env``: where the cell ran (``bench.run.environment.capture``)."""

    python: str | None = entry("Python version")
    platform: str | None = entry("platform string")
    host: str | None = entry("host name")
    cpu_model: str | None = entry("CPU model")
    cpu_count: int | None = entry("logical CPUs")
    bench_version: str | None = entry("this package's version")
    git_commit: str | None = entry("the bench checkout's commit")
    image: str | None = entry("the stack image's tag (null outside make)")
    image_digest: str | None = entry("the image the cell ran in: its registry digest when pulled (make bench-all "
                                     "REGISTRY=...), else its local image ID (null outside make)")
    image_flavor: str | None = entry("the image flavor (cpu or gpu)")
    in_container: bool | None = entry("the cell ran inside a container")
    packages: dict[str, Any] = entry("package -> version of the frameworks and libraries", default={})
    stack_base: str | None = entry("a derived stack (make version-stack): the stack it is derived from; null otherwise")
    pins: dict[str, Any] = entry("a derived stack: per pinned package, the version installed in the container "
                                 "(importlib.metadata; null: not installed)", default={})
    pins_ok: bool | None = entry("a derived stack: every pinned package is installed at its declared version "
                                 "(false: the image is not what the stack declares); null otherwise")
    framework_cuda: dict[str, Any] = entry("per framework: the CUDA/cuDNN it was built with and the GPUs it sees",
                                           default={})
    gpu: Gpu = entry("the GPU and driver (NVML)", default=None)
    env_vars: dict[str, Any] = entry("the environment variables that change how a framework runs", default={})
    cuda_cache: CudaCache | None = entry("the CUDA JIT cache's growth over the cell's process (the runner's)")
    error: str | None = entry("why the environment could not be captured")


@dataclass
class Telemetry:
    """``telemetry``: NVML over the timed window (``bench.run.telemetry``); repeat 1's for a repeated cell."""

    available: bool | None = entry("whether NVML telemetry was recorded")
    reason: str | None = entry("why not (CPU run, no NVML)")
    gpu_name: str | None = entry("the sampled GPU's name")
    gpu_index: int | str | None = entry("the sampled GPU: its NVML index, or the UUID (GPU-... / MIG-...) when "
                                             "CUDA_VISIBLE_DEVICES names it so")
    window: str | None = entry("the summarised window (the training steps of epochs 2..N, validation excluded, or "
                               "of the whole run with one epoch)")
    window_s: float | None = entry("its length", "s")
    samples: int | None = entry("samples in the window")
    interval_s: float | None = entry("sampling period", "s")
    gpu_util_pct: Stats | None = entry("NVML GPU utilisation rate over the window", "%")
    mem_util_pct: Stats | None = entry("NVML memory utilisation rate over the window", "%")
    power_w: Stats | None = entry("board power over the window", "W")
    power_source: str | None = entry("'instant' (NVML_FI_DEV_POWER_INSTANT) or 'average' (nvmlDeviceGetPowerUsage, "
                                     "where the field is not offered; telemetry.notes says what it averages)")
    sm_clock_mhz: Stats | None = entry("SM clock over the window", "MHz")
    mem_clock_mhz: Stats | None = entry("memory clock over the window", "MHz")
    temperature_c: Stats | None = entry("GPU temperature over the window", "degC")
    memory_used_peak_bytes: int | None = entry("peak device memory in use as NVML sees it, all processes", "bytes")
    idle_power_w: float | None = entry("mean power over 1 s before the workload started", "W")
    energy_j: float | None = entry("energy over the window: the counter delta between synchronised edges, or "
                                   "integrated sampled power when the counter is unusable", "J")
    energy_method: str | None = entry("counter or integrated_power")
    energy_counter_j: float | None = entry("the energy counter's estimate", "J")
    energy_integrated_j: float | None = entry("integrated sampled power's estimate", "J")
    energy_note: str | None = entry("why the counter was not used (stalled, reset) or was unwrapped")
    energy_counter_vs_integrated: float | None = entry("counter energy / integrated power energy (a check: ~1.0 "
                                                       "over windows of 10 s or more)", "ratio")
    energy_per_epoch_j: list[float] | None = entry("energy of each epoch's training steps (its two edges' counter "
                                                   "reads); epochs under 1 s are named in telemetry.notes: the "
                                                   "counter's ~20-100 ms updates make their J coarse", "J")
    j_per_epoch: float | None = entry("energy per steady epoch", "J")
    j_per_step: float | None = entry("energy per step", "J")
    examples_per_j: float | None = entry("examples per joule", "examples/J")
    energy_above_idle_j: float | None = entry("energy minus idle power x the window's time", "J")
    j_per_step_above_idle: float | None = entry("that per step", "J")
    throttled: bool | None = entry("whether thermal or hardware clock-event reasons (HwSlowdown, HwThermalSlowdown, "
                                   "HwPowerBrakeSlowdown, SwThermalSlowdown) were active")
    throttle_reasons: list[str] | None = entry("every clock-event reason seen (SwPowerCap included)")
    throttle_fraction: float | None = entry("share of samples under the thermal/hardware reasons", "fraction")
    power_capped_fraction: float | None = entry("share of samples with SwPowerCap (clocks held to the power limit: "
                                                "the normal state of a loaded A100/H100, not throttling)", "fraction")
    cpu_util_pct: float | None = entry("CPU time of the cell's process over the window, % of one core (also on CPU "
                                       "runs)", "%")
    notes: list[str] | None = entry("caveats of the window (short window, averaged power)")
    unsupported: dict[str, Any] = entry("metric -> NVML error for each metric the GPU or driver does not offer",
                                        default={})


_TF32_SWITCHES = ("the framework's TF32 switch as the cell ended")


@given
@dataclass
class EffectiveSettings(Block):
    """``settings``: every knob (``bench.core.knobs``: declared there) and what took effect, as the engines and
    the worker recorded it. Engine-specific keys beyond these are allowed."""

    NVIDIA_TF32_OVERRIDE: str | None = entry("as the cell's process had it: '0' (cuBLAS/cuDNN never use TF32) for "
                                             "tf32=off, else unset")
    tf_tensor_float_32_execution: bool | None = entry(_TF32_SWITCHES)
    jax_default_matmul_precision: str | None = entry(_TF32_SWITCHES)
    torch_matmul_allow_tf32: bool | None = entry(_TF32_SWITCHES)
    torch_cudnn_allow_tf32: bool | None = entry(_TF32_SWITCHES)
    torch_float32_matmul_precision: str | None = entry(_TF32_SWITCHES)
    torch_matmul_fp32_precision: str | None = entry("torch 2.9+: torch.backends.cuda.matmul.fp32_precision as the "
                                                    "cell ended ('tf32'; 'ieee'; 'none': inherited, no TF32)")
    torch_cudnn_conv_fp32_precision: str | None = entry("torch 2.9+: torch.backends.cudnn.conv.fp32_precision (cuDNN "
                                                        "convolutions), as torch_matmul_fp32_precision")
    torch_cudnn_rnn_fp32_precision: str | None = entry("torch 2.9+: torch.backends.cudnn.rnn.fp32_precision (cuDNN "
                                                       "RNN kernels), as torch_matmul_fp32_precision")
    torch_cudnn_fp32_precision: str | None = entry(
        "torch 2.9+: the cuDNN-wide torch.backends.cudnn.fp32_precision, which inductor's Triton convolution kernels "
        "(torch.compile max-autotune) follow: TF32 only when 'tf32' (tf32=on sets it, tf32=off 'ieee'; at "
        "tf32=default it is 'none', so such a kernel runs FP32 while cuDNN's convolutions run TF32)")
    tf32_matmul: bool | None = entry("float32 matmuls could use TF32: a GPU cell with no override and the "
                                     "framework's switch on (MFU divides by the peak of the math in effect)")
    tf32_conv: bool | None = entry("float32 convolutions could use TF32 (as tf32_matmul)")
    tf32_rnn: bool | None = entry("float32 LSTMs could use TF32, by the switch that governs the kernel they ran as: "
                                  "cuDNN's RNN kernel for plain PyTorch's nn.LSTM on a GPU (cudnn.allow_tf32), "
                                  "the backend's matmuls for every Keras stack's 2017 LSTMs (no cuDNN: hard_sigmoid) "
                                  "and plain JAX's (bench.run.engines.math_mode.rnn_on_cudnn)")
    compile_cache: str | None = entry("PyTorch-backend stacks: 'fresh per cell' (torch.compile's inductor and Triton "
                                      "caches in an empty directory per cell process), plus any inductor cache switch "
                                      "the environment set")
    train_data_placement: str | None = entry("where each training batch is made, its first word 'host' or 'device' "
                                             "(Keras: 'host (tf.data)', 'host (NumPy)', 'device (torch tensors)'; "
                                             "the PyTorch and JAX loops name their pipeline's)")
    generated_tokens: int | None = entry("paper suite, generate: tokens produced per sequence per call")
    prompt_tokens: int | None = entry("paper suite, generate: prompt length fed per sequence")
    bos_token_id: int | None = entry("paper suite, generate: the prompt's BOS id")
    tokenization_timed: bool | None = entry("paper suite, generate: false: the timed call takes token ids, without "
                                            "the tokenizer the source ran inside it")
    jit_compile_requested: Any = entry("paper suite, Keras: the jit_compile asked for (True, False, 'auto', or 'not "
                                       "requested (Keras default)')")
    jit_compile_requested_by: str | None = entry("who asked: the source's call (file@v0.0.5) or the jit_compile knob")
    generate_function: str | None = entry("paper suite, Keras generate: how the generate function was compiled")
    optimizer: dict[str, Any] | None = entry("fit suites: the optimizer as built, read back from it: name, "
                                             "learning_rate, its hyper-parameters and lr_schedule; tf-keras "
                                             "(keras2-tf): jit_compile, its own XLA update step as it took effect "
                                             "(on with a GPU unless the cell's jit_compile is false)")
    loss: Any = entry("fit suites: the loss as the engine computed it")
    labels: dict[str, Any] | None = entry("fit suites, Keras: the label form fed to fit ('one_hot': "
                                          "keras.utils.to_categorical on the host before fit, as the 2017 scripts; "
                                          "'integer'), the compiled metrics and the source (file@tag:lines)")
    augmentation: dict[str, Any] | None = entry("fit suites: how training images were augmented (shift ranges, "
                                                "flip, fill, interpolation, workers, where, implementation)")
    shuffle_buffer: int | None = entry("fit suites: examples each epoch's shuffle draws from")
    row_lstm_calls_per_forward: int | None = entry("mnist_hierarchical_rnn, Keras: calls of the row LSTM in one "
                                                   "forward pass, counted on the trained model (28: one per image "
                                                   "row; 1: all rows at once, as Keras 2.0.8)")
    row_lstm_form: str | None = entry("mnist_hierarchical_rnn, Keras: the row LSTM's form as measured: 'reshape' (one "
                                      "call on the B*28 rows, 2017's form) or 'per_row' (28 calls of B rows, Keras 3's "
                                      "TimeDistributed); the knob row_lstm is what was asked")
    normalize: dict[str, Any] | None = entry("PyTorch torchvision_dataset_transforms: Normalize's mean and std and "
                                             "where they come from")
    model_config: dict[str, Any] | None = entry("paper suite: the architecture config built (full: the published "
                                                "one; smoke: tiny)")
    keras_version: str | None = entry("Keras' version")
    keras_backend: str | None = entry("Keras' backend")
    torch_version: str | None = entry("PyTorch's version")
    jax_version: str | None = entry("plain-JAX stack: JAX's version (jaxlib_version beside it)")
    flax_version: str | None = entry("plain-JAX stack: Flax's version (the NNX models)")
    optax_version: str | None = entry("plain-JAX stack: optax's version (the optimizers)")


@dataclass
class Record:
    """One cell's result record (one JSON file; ``bench.results.record.new_record`` makes its skeleton)."""

    schema_version: int = entry("integer version of this record layout", default=SCHEMA_VERSION)
    cell_id: str = entry("stack__suite__workload__task__size__variant, then __key=value+... for each measurement "
                         "input off its default (batch_size, epochs, steps, seq_len, data); also the file name "
                         "(paper suite: variant bs<N>)", default="")
    stack: str = entry("the cell's stack", default="")
    suite: str | None = entry("the cell's suite")
    workload: str = entry("the cell's workload", default="")
    task: str = entry("the cell's task (fit, predict, generate...)", default="")
    size: str = entry("smoke or full", default="")
    variant: str | None = entry("the settings set's name (default: out of the box)")
    device: str = entry("cpu or gpu, as resolved for the run", default="")
    status: str = entry("ok | failed | timeout | oom | unsupported", default="failed")
    reason: str | None = entry("why a cell is not ok (null when ok)")
    batch_size: int | None = entry("examples per step")
    data: Data = entry("the data the cell used", default=None)
    settings: EffectiveSettings = entry("every precision/compile setting in effect: requested and effective values",
                                        default=None)
    settings_requested: dict[str, Any] = entry("the knobs the cell asked for (its variant), before the framework "
                                               "resolved them", default={})
    baseline: bool | None = entry("true for the out-of-the-box variant of a sweep")
    repeat: int | None = entry("1-based repeat index in a per-repeat record (null in the aggregated cell record)")
    schedule: dict[str, Any] | None = entry("rounds (make bench-all): seed, round of rounds, the round's shuffled "
                                            "stack order and this stack's position in it")
    metrics: Metrics = entry("the timed results", default=None)
    repeats: Repeats | None = entry("the repeats and their spread (a repeated cell's record)")
    telemetry: Telemetry = entry("NVML telemetry over the timed window", default=None)
    history: dict[str, Any] = entry("per-epoch train loss/accuracy and validation loss/accuracy where the source had "
                                    "them", default={})
    model: Model = entry("the model's parameter counts", default=None)
    memory: Memory = entry("peak memory", default=None)
    output: Output | None = entry("paper suite: the last step's output")
    process: Process = entry("the cell's process", default=None)
    env: Env = entry("Python, framework and CUDA/cuDNN versions, GPU and driver (NVML), CPU, image, git commit, host",
                     default=None)
    gpu_before: dict[str, Any] | None = entry("GPU cells: the GPU as the cell started: processes, "
                                              "process_memory_bytes, temperature_c, seen_from (whose processes the "
                                              "count covers: host pid namespace | container pid namespace)")
    cooldown: dict[str, Any] | None = entry("GPU cells with --cooldown: idle_c, idle_source (where the idle "
                                            "temperature was read), target_c, start_c, end_c, waited_s, reached, "
                                            "max_s")
    notes: list[str] = entry("warnings that travel with the row (e.g. a CPU run is not a GPU benchmark)", default=[])
    started_utc: str | None = entry("when the worker started (UTC, ISO 8601)")
    finished_utc: str | None = entry("when it finished (UTC, ISO 8601)")
    traceback: str | None = entry("a failed cell's traceback (not in the CSV)")


#: Statuses a cell can end in. Only ``ok`` carries timings.
STATUSES = ("ok", "failed", "timeout", "oom", "unsupported")
#: Fields a record must hold to be read at all.
REQUIRED = ("schema_version", "cell_id", "stack", "workload", "task", "size", "device", "status")


# ---- introspection -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Declared:
    """One declared field: its dotted CSV ``name``, ``help``, ``unit``, ``rule`` and Python ``type``."""

    name: str
    help: str
    unit: str
    rule: str
    type: Any


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _block_of(tp: Any) -> type | None:
    """The declared block class inside an annotation (``Metrics | None`` -> Metrics), else None."""
    candidates = typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,)
    return next((c for c in candidates if dataclasses.is_dataclass(c) and isinstance(c, type)), None)


def walk(cls: type = Record, prefix: str = "") -> Iterator[Declared]:
    """Every declared field of ``cls`` and its blocks, depth first in declaration order, as dotted names."""
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        name = f"{prefix}{f.name}"
        block = _block_of(hints[f.name])
        if block is not None:
            yield from walk(block, f"{name}.")
        else:
            yield Declared(name, f.metadata["help"], f.metadata["unit"], f.metadata["rule"], hints[f.name])


#: Where each block class sits in the record (``col`` builds names from it).
_PREFIX: dict[type, str] = {Record: ""}


def _index(cls: type, prefix: str) -> None:
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        block = _block_of(hints[f.name])
        if block is not None and block is not Stats:
            _PREFIX.setdefault(block, f"{prefix}{f.name}.")
            _index(block, f"{prefix}{f.name}.")


_index(Record, "")


def col(block: type, name: str, *sub: str) -> str:
    """The dotted CSV column of a declared field: ``col(Metrics, "mfu")`` -> ``"metrics.mfu"``; ``sub`` goes into a
    declared sub-block (``col(Telemetry, "power_w", "mean")``) or an open mapping (``col(Env, "packages", "jax")``).

    Raises:
        KeyError: ``name`` (or a ``sub`` of a declared sub-block) is not declared, so a renamed field breaks the
            report at import and its tests.
    """
    if block is Spread:
        raise KeyError("repeats.<metric> columns: use spread_col(metric, stat)")
    if block not in _PREFIX:
        raise KeyError(f"{getattr(block, '__name__', block)!r} is not a block of the record")
    hints = _hints(block)
    if name not in hints:
        raise KeyError(f"{block.__name__} declares no field {name!r}")
    inner = _block_of(hints[name])
    if sub and inner is not None:
        return col(inner, sub[0], *sub[1:]) if inner in _PREFIX else _sub(inner, _PREFIX[block] + name, sub)
    return ".".join((f"{_PREFIX[block]}{name}", *sub))


def _sub(block: type, prefix: str, sub: tuple[str, ...]) -> str:
    if sub[0] not in _hints(block) or len(sub) > 1:
        raise KeyError(f"{block.__name__} declares no field {'.'.join(sub)!r}")
    return f"{prefix}.{sub[0]}"


def spread_col(metric: str, stat: str) -> str:
    """``repeats.<metric>.<stat>``, for a metric that has a spread (rule median or derived) and a ``Spread`` field.

    Raises:
        KeyError: the metric has no spread or ``stat`` is not a ``Spread`` field.
    """
    if metric not in aggregated() + derived_metrics():
        raise KeyError(f"metrics.{metric} has no spread across repeats (rule median or derived)")
    if stat not in _hints(Spread):
        raise KeyError(f"Spread declares no field {stat!r}")
    return f"repeats.{metric}.{stat}"


def metrics_with(rule: Rule) -> tuple[str, ...]:
    """The ``Metrics`` fields with ``rule``, in declaration order."""
    return tuple(f.name for f in dataclasses.fields(Metrics) if f.metadata["rule"] == rule)


def aggregated() -> tuple[str, ...]:
    """Metrics the aggregation of repeats takes as the median across repeats."""
    return metrics_with("median")


def derived_metrics() -> tuple[str, ...]:
    """Metrics recomputed from the aggregated ones (``bench.results.derived``)."""
    return metrics_with("derived")


# ---- settings: the knobs declare themselves ------------------------------------------------------------------

def knob_docs() -> dict[str, str]:
    """Knob name -> its help, from ``bench.core.knobs``' settings classes (the fit engines' text first)."""
    out: dict[str, str] = {}
    for cls in SETTINGS.values():
        for f in dataclasses.fields(cls):
            out.setdefault(f.name, f.metadata["help"])
    return out


def setting_col(name: str) -> str:
    """``settings.<name>`` for a knob (``bench.core.knobs``) or a declared effective setting.

    Raises:
        KeyError: neither declares ``name``.
    """
    if name in knob_docs():
        return f"settings.{name}"
    return col(EffectiveSettings, name)


def declared_names() -> list[str]:
    """Every declared dotted name in declaration order, the knobs (``settings.<knob>``) first in the settings
    block."""
    names = [d.name for d in walk()]
    at = next(i for i, n in enumerate(names) if n.startswith("settings."))
    names[at:at] = [f"settings.{k}" for k in knob_docs()]
    return names


# ---- bench fields ----------------------------------------------------------------------------------------------

def describe() -> list[tuple[str, str]]:
    """(dotted name, "meaning [unit; rule across repeats]") for every declared field, knobs included: what ``bench
    fields`` prints."""
    rows = []
    for d in walk():
        tag = "; ".join(x for x in (d.unit, f"repeats: {d.rule}") if x)
        rows.append((d.name, f"{d.help} [{tag}]"))
    knobs = [(f"settings.{k} (knob)", f"{v} [repeats: first]") for k, v in knob_docs().items()]
    at = next(i for i, (n, _) in enumerate(rows) if n.startswith("settings."))
    rows[at:at] = knobs
    rows += [("repeats.<metric>.<values|median|min|max|cv>", "every metric with rule median or derived, across "
              "repeats (Spread)"),
             ("settings_requested.* / env.packages.* / env.env_vars.* / env.framework_cuda.* / history.* / "
              "telemetry.unsupported.*", "open mappings: their keys vary by stack and engine")]
    return rows


# ---- CSV column order --------------------------------------------------------------------------------------------

#: The columns that lead every CSV, in this order (declared fields; ``col`` checks every name).
LEADING: tuple[str, ...] = (
    col(Record, "stack"), col(Record, "suite"), col(Record, "workload"), col(Record, "task"), col(Record, "size"),
    col(Record, "variant"), col(Record, "device"), col(Record, "status"), col(Record, "reason"),
    col(Record, "batch_size"), col(Data, "source"), setting_col("sync"), col(Metrics, "ms_per_step_mean"),
    col(Metrics, "ms_per_step_p50"), col(Metrics, "ms_per_step_p90"), col(Metrics, "ms_per_step_std"),
    col(Metrics, "first_epoch_s"), col(Metrics, "steady_epoch_s"), col(Metrics, "samples_per_s"),
    col(Metrics, "total_train_s"), col(Metrics, "j_per_epoch"), col(Repeats, "n"),
    spread_col("ms_per_step_mean", "cv"), col(Telemetry, "gpu_util_pct", "mean"), col(Telemetry, "power_w", "mean"),
    col(Telemetry, "throttled"), col(Model, "params_total"), col(Record, "notes"))
#: Record fields the CSV leaves out.
SKIP_KEYS = ("traceback",)


def column_order(columns: list[str]) -> list[str]:
    """``columns`` ordered for the CSV: ``LEADING``, then the other declared fields in declaration order (knobs
    with the settings block), then every undeclared column (open mappings, spreads) alphabetically."""
    present = set(columns)
    declared = declared_names()
    lead = [c for c in LEADING if c in present]
    rest = [c for c in declared if c in present and c not in lead]
    known = set(lead) | set(rest)
    return lead + rest + sorted(c for c in columns if c not in known)


# ---- validation ----------------------------------------------------------------------------------------------------

def _accepts(tp: Any, value: Any) -> bool:
    """Whether a JSON ``value`` fits the annotation ``tp`` (numbers: an int fits a float; a bool fits no number)."""
    if tp is Any or value is None and tp is type(None):
        return True
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(a, value) for a in typing.get_args(tp))
    if dataclasses.is_dataclass(tp) or origin is dict or tp is dict:
        return isinstance(value, dict)
    if origin is list or tp is list:
        return isinstance(value, list)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, tp) if isinstance(tp, type) else True


def problems(record: dict[str, Any], cls: type = Record, prefix: str = "") -> list[str]:
    """What in ``record`` does not fit the declared schema (empty when it fits): a declared field of the wrong JSON
    type, a block that is not an object. Undeclared keys are allowed. The settings block is checked as a mapping
    only (its knobs' values changed type across schema versions, e.g. tf32 was a bool in version 2)."""
    out = []
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        if f.name not in record:
            continue
        value, name, tp = record[f.name], f"{prefix}{f.name}", hints[f.name]
        block = _block_of(tp)
        if not _accepts(tp, value):
            out.append(f"{name} is {'null' if value is None else type(value).__name__}, declared {_show(tp)}")
        elif block is not None and block is not EffectiveSettings and isinstance(value, dict):
            out += problems(value, block, f"{name}.")
    return out


def _show(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")

"""The result record: one JSON file per cell, written atomically.

Every field is documented in ``FIELDS`` (the main ones also in docs/outputs.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.core.atomic import write_json_atomic  # noqa: F401  (records are written with it: part of this API)
from bench.results.cell import Cell  # noqa: F401  (moved to cell.py; imported from here too)

SCHEMA_VERSION = 2  # 2: telemetry, repeats, settings_requested, baseline

#: Statuses a cell can end in. Only ``ok`` carries timings.
STATUSES = ("ok", "failed", "timeout", "oom", "unsupported")
#: Statuses a resumed run does not repeat (a failure is retried on the next run).
FINAL_STATUSES = ("ok", "unsupported")

FIELDS: dict[str, str] = {
    "schema_version": "integer version of this record layout",
    "cell_id": "stack__suite__workload__task__size__variant, then __key=value+... for each measurement input off its "
               "default (batch_size, epochs, steps, seq_len, data); also the file name (paper suite: variant bs<N>)",
    "stack / suite / workload / task / size / variant": "the cell's coordinates",
    "device": "cpu or gpu, as resolved for the run",
    "status": "ok | failed | timeout | oom | unsupported",
    "reason": "why a cell is not ok (null when ok)",
    "batch_size": "examples per step",
    "data.source": "real (the published dataset) or synthetic (same shapes and dtypes, random values; fit suites: "
                   "only at smoke size or when asked)",
    "data.requested": "fit suites: the --data policy (auto: real, synthetic only at smoke; real; synthetic)",
    "settings.*": "every precision/compile setting in effect: requested and effective values",
    "settings_requested.*": "the knobs the cell asked for (its variant), before the framework resolved them",
    "settings.tf32": "the math-mode knob: default (each framework's shipped mode: TensorFlow and JAX TF32 on, PyTorch "
                     "matmul off and cuDNN convolutions on; the sources' method), off (strict FP32), on (TF32 for "
                     "matmuls and convolutions everywhere)",
    "settings.NVIDIA_TF32_OVERRIDE": "as the cell's process had it: '0' (cuBLAS/cuDNN never use TF32) for tf32=off, "
                                     "else unset",
    "settings.tf_tensor_float_32_execution / jax_default_matmul_precision / torch_matmul_allow_tf32 / "
    "torch_cudnn_allow_tf32 / torch_float32_matmul_precision": "the framework's TF32 switches as the cell ended",
    "settings.tf32_matmul / tf32_conv / tf32_rnn": "whether float32 matmuls / convolutions / recurrent layers "
                                                   "(PyTorch: cuDNN's RNN kernels) could use TF32: a GPU cell with no "
                                        "override and the framework's switch for that op on (MFU divides by the "
                                        "peak of the math in effect, matmuls and convolutions weighed by their "
                                        "share of the FLOPs)",
    "settings.compile_cache": "PyTorch-backend stacks: 'fresh per cell' (torch.compile's inductor and Triton caches "
                              "in an empty directory per cell process, removed after: no cell compiles warm from "
                              "another's graphs), plus any inductor cache switch the environment set, e.g. "
                              "TORCHINDUCTOR_FX_GRAPH_CACHE=0",
    "settings.train_data_placement": "Keras: where fit makes each training batch for the data_pipeline on this "
                                     "backend: 'host (tf.data)', 'host (NumPy)' (both copy each batch to the "
                                     "device) or 'device (torch tensors)' (tensors_fit on Keras 3's PyTorch "
                                     "backend only; on TensorFlow and JAX, fit batches tensors on the host)",
    "settings.generated_tokens": "paper suite, generate: tokens produced per sequence per call (fixed length: "
                                 "to max_length, 44 at full size)",
    "settings.prompt_tokens / bos_token_id": "paper suite, generate: prompt length fed per sequence (tokens: the "
                                            "BOS id, then 5 word tokens, as the source's preprocessor built it)",
    "settings.tokenization_timed": "paper suite, generate: false: the timed call takes token ids, without the "
                                   "tokenizer the source ran inside it (a note says so)",
    "settings.jit_compile_requested / jit_compile_requested_by": "paper suite, Keras: the jit_compile asked for "
        "(True, False, 'auto', or 'not requested (Keras default)') and who asked: the source's call "
        "(file@v0.0.5) or the jit_compile knob (a variant)",
    "settings.jit_compile": "Keras: XLA in effect, read from the model after the run (Keras 3 resolves 'auto'); "
                            "paper suite: tf.keras' unset None is recorded false, and for generate it says "
                            "whether the generate function was compiled (settings.generate_function: how)",
    "settings.optimizer.*": "fit suites: the optimizer as built, read back from it: name, learning_rate (initial), "
                            "its rule's hyper-parameters in the framework's names (Keras: rho, epsilon, beta_1/2; "
                            "PyTorch: alpha, rho, eps, betas) and lr_schedule (Keras 2.0.8's decay: InverseTimeDecay "
                            "/ LambdaLR; null: constant)",
    "settings.loss": "fit suites: the loss as the engine computed it",
    "settings.augment / augmentation.*": "fit suites: whether the training images were augmented (the workload's "
                                         "source augmentation, unless augment=false), and how: shift ranges, flip, "
                                         "fill, interpolation, workers, max_queue_size, drop_remainder, where, "
                                         "implementation (the library calls)",
    "settings.data_pipeline / train_data_placement": "fit suites: how batches reached the model as it took "
                                                     "effect (host_augmentation: the augmenting pipeline), and "
                                                     "where they were produced",
    "settings.shuffle_buffer": "fit suites: examples each epoch's shuffle draws from (tf.data: the tuning study's "
                               "20,000, capped at the training set; otherwise the whole training set)",
    "settings.normalize.*": "PyTorch torchvision_dataset_transforms: Normalize's mean and std and where they come from",
    "settings.model_config": "paper suite: the architecture config built (full: the published one; smoke: tiny)",
    "baseline": "true for the out-of-the-box variant of a sweep (the tuning suite's reference point)",
    "repeat": "1-based repeat index in a per-repeat record (null in the aggregated cell record)",
    "output.shapes / finite": "paper suite: the shapes of the last step's output (predict: the model's, torch fit: "
                              "the loss) and that it holds no NaN/Inf (a non-finite output fails the cell)",
    "process.gpu_s / repeats.gpu_s": "GPU-seconds: the cell process's wall time on a GPU (0 on CPU), and the sum "
                                     "over the cell's repeats (the report's GPU-hours and cost)",
    "env.image_digest": "the image the cell ran in: its registry digest when pulled (make bench-all REGISTRY=...), "
                        "else its local image ID (null outside make)",
    "gpu_before.*": "GPU cells: the GPU as the cell started: processes (other compute processes NVML lists), "
                    "process_memory_bytes, temperature_c; a busy GPU also puts a note in the row",
    "cooldown.*": "GPU cells with --cooldown: idle_c (at the run's start), target_c, start_c, end_c, waited_s and "
                  "whether the target was reached before the cap max_s",
    "schedule.*": "rounds (make bench-all): seed, round of rounds, the round's shuffled stack order and this "
                  "stack's position in it (repeat 1's; repeats.schedule lists every repeat's)",
    "metrics.first_epoch_s": "seconds of the first epoch: includes tracing/compilation (s)",
    "metrics.steady_epoch_s": "mean seconds per epoch over epochs 2..N, training steps only (s)",
    "metrics.epoch_s": "seconds of each epoch's training steps, the first included (JSON list; s; repeat 1's)",
    "metrics.ms_per_step_*": "mean/p50/p90/std/min/max of per-step wall time over steady epochs (ms); the mean "
                             "is total time / steps; p50..max are over the timed intervals' mean step times "
                             "(metrics.ms_per_step_basis; null with fewer than two intervals)",
    "metrics.ms_per_step_basis / executions": "what one timed interval is: 'step', 'execution' (steps_per_execution "
                                              "> 1 under sync=step), 'window' (sync=every:N) or 'epoch' "
                                              "(sync=epoch), and how many steady intervals were timed",
    "metrics.sync / barriers / clock_reads": "the timing cadence in effect (settings.sync: epoch, every:N or step) "
                                             "and how many device barriers and clock reads the timer made",
    "metrics.samples_per_s": "training examples per second over steady epochs",
    "metrics.total_train_s": "training steps of all epochs, compilation included, validation excluded (s)",
    "metrics.fit_s / fit_s_per_epoch": "fit suites: wall time of the whole fit, between device barriers (every "
                                       "epoch, the first and each one's validation included; s), and that over the "
                                       "epochs: the 2017 Keras backend comparison's metric, s/epoch",
    "metrics.first_step_s": "the first step alone, tracing, compilation and lazy initialisation included (the model "
                            "is built before the clock starts) (s; paper suite, and fit "
                            "cells under sync=step; null otherwise)",
    "metrics.steps / steady_s": "paper suite: timed steps after the first (default 100), and their total (s)",
    "metrics.examples_per_s / tokens_per_s": "paper suite: examples (sequences, images) per second over the timed "
                                             "steps; generated tokens per second for generate",
    "metrics.flops_per_step / flops_method": "paper suite: model FLOPs of one step (null outside the table: smoke "
                                             "size, another sequence length) and how they were counted",
    "metrics.achieved_tflops / mfu": "paper suite: FLOPs per step / mean step time (TFLOP/s), and that over the "
                                     "GPU's dense peak for the dtype in use (null without a known peak)",
    "metrics.peak_flops / peak_source": "the dense peak used for MFU (FLOP/s) and its source, or why it is null",
    "metrics.measured_peak_flops / measured_peak_source / mfu_measured": "the GEMM FLOP/s `make doctor` measured in "
        "this image on this GPU (matched by NVML UUID, else model name) for the math in effect, where it came from, "
        "and MFU against it (null + why)",
    "metrics.j_per_step / j_per_epoch / examples_per_j": "energy per step and per steady epoch (J), and "
                                                          "training examples per joule (null without NVML)",
    "repeats.n / ok / statuses / rule": "number of independent repeats, how many were ok, their statuses, and "
                                        "the aggregation rule (median per metric, no best-of-N)",
    "repeats.<metric>.values / median / min / max / cv": "per-repeat values of a metric and their spread "
                                                         "(cv = sample std / mean)",
    "telemetry.available / reason": "whether NVML telemetry was recorded; why not (CPU run, no NVML)",
    "telemetry.window / window_s / samples / interval_s": "the summarised window (the training steps of "
                                                          "epochs 2..N, validation excluded, or of the whole run with "
                                                          "one epoch), its length (s), sample count, period",
    "telemetry.gpu_util_pct / mem_util_pct .mean/p50/max": "NVML utilisation rates over the window (%)",
    "telemetry.power_w .mean/p50/max; power_source": "board power (W); 'instant' (NVML_FI_DEV_POWER_INSTANT) or "
                                                      "'average' (nvmlDeviceGetPowerUsage, where the field is not "
                                                      "offered: a 1-s average on Ampere-and-newer GPUs other than "
                                                      "GA100, instantaneous on GA100 (A100, A30) and older; "
                                                      "telemetry.notes says which)",
    "telemetry.sm_clock_mhz / mem_clock_mhz / temperature_c": "clocks (MHz) and GPU temperature (degC), mean/p50/max",
    "telemetry.memory_used_peak_bytes": "peak device memory in use as NVML sees it, all processes (bytes)",
    "telemetry.idle_power_w": "mean power over 1 s before the workload started (W)",
    "telemetry.energy_j / energy_method": "energy over the window (J): the total-energy counter delta between "
                                          "synchronised edges, or integrated sampled power when the counter is "
                                          "unusable (method says which)",
    "telemetry.energy_counter_j / energy_integrated_j / energy_note": "both estimates, and why the counter was "
                                                                      "not used (stalled, reset) or was unwrapped",
    "telemetry.energy_counter_vs_integrated": "counter energy / integrated power energy (a check: ~1.0 over "
                                              "windows of 10 s or more)",
    "telemetry.energy_per_epoch_j": "energy of each epoch, from epoch start to the next (J)",
    "telemetry.throttled / throttle_reasons / throttle_fraction": "whether thermal or hardware clock-event "
        "reasons (HwSlowdown, HwThermalSlowdown, HwPowerBrakeSlowdown, SwThermalSlowdown) were active, every reason "
        "seen (SwPowerCap included), and the share of samples under the thermal/hardware ones",
    "telemetry.power_capped_fraction": "share of samples with SwPowerCap (clocks held to the power limit: the normal "
                                       "state of a loaded A100/H100, so not counted as throttling)",
    "telemetry.energy_above_idle_j / j_per_step_above_idle / metrics.j_per_step_above_idle": "energy minus idle power "
        "x the window's time (J), and per step: what the work added to an idle GPU's draw (MLPerf power's "
        "convention); energy_method (counter or integrated_power) and interval_s (sampling period) say how",
    "telemetry.cpu_util_pct": "CPU time of the cell's process over the window, % of one core (also on CPU runs)",
    "telemetry.unsupported": "metric -> NVML error for each metric the GPU or driver does not offer (null fields)",
    "history.*": "per-epoch train loss/accuracy and validation loss/accuracy where the source had them",
    "model.params_total / params_trainable": "parameter counts as the framework reports them",
    "memory.host_peak_rss_bytes": "peak resident memory of the cell's own process (bytes)",
    "memory.device_peak_bytes": "peak device memory the framework allocated (bytes; null on CPU)",
    "process.wall_s": "wall time of the whole cell process, imports included (s)",
    "env.*": "Python, framework and CUDA/cuDNN versions, GPU and driver (NVML), CPU, image, git commit, host",
    "env.gpu.mig_mode": "the GPU is in MIG mode (null where NVML does not say); then a note says MFU and energy "
                        "are the whole GPU's and not comparable",
    "env.cuda_cache.*": "the CUDA JIT cache (CUDA_CACHE_PATH, a compose volume): bytes before the cell's process "
                        "started and after it exited (the driver writes the cache at exit), and jit_compiled = it "
                        "grew (the first step/epoch paid for compiling PTX for this GPU; null without the variable)",
    "notes": "warnings that travel with the row (e.g. a CPU run is not a GPU benchmark)",
}


def new_record(cell: Cell) -> dict[str, Any]:
    """A record skeleton for ``cell`` with every top-level field present (status ``failed``)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "cell_id": cell.id,
        "stack": cell.stack,
        "suite": cell.suite,
        "workload": cell.workload,
        "task": cell.task,
        "size": cell.size,
        "variant": cell.variant,
        "device": cell.device,
        "status": "failed",
        "reason": None,
        "batch_size": cell.batch_size,
        "data": {},
        "settings": dict(cell.settings),
        "settings_requested": dict(cell.settings),
        "baseline": cell.baseline,
        "repeat": cell.repeat,
        "schedule": cell.schedule,
        "metrics": {},
        "telemetry": {},
        "history": {},
        "model": {},
        "memory": {},
        "process": {},
        "env": {},
        "notes": [],
        "started_utc": None,
        "finished_utc": None,
    }


class RecordError(ValueError):
    """A result file that is not a complete, valid record."""


REQUIRED = ("schema_version", "cell_id", "stack", "workload", "task", "size", "device", "status")


def read_record(path: Path) -> dict[str, Any]:
    """Load and validate one result file.

    Raises:
        RecordError: unreadable JSON, not an object, missing required fields, unknown status or
            a schema version newer than this code understands.
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RecordError(f"not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise RecordError("not a JSON object")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise RecordError(f"missing fields: {', '.join(missing)}")
    if not isinstance(data["schema_version"], int) or data["schema_version"] > SCHEMA_VERSION:
        raise RecordError(f"unsupported schema_version {data['schema_version']!r}")
    if data["status"] not in STATUSES:
        raise RecordError(f"unknown status {data['status']!r}")
    return data


#: Sub-directory of ``OUT/<stack>/`` holding per-repeat records (the collector reads only cell records).
REPEATS_DIR = "repeats"


def result_path(out_dir: Path, cell: Cell) -> Path:
    """Where the record of ``cell`` lives inside a run directory: ``OUT/<stack>/<cell_id>.json``, or
    ``OUT/<stack>/repeats/<cell_id>__r<k>.json`` for repeat k."""
    if cell.repeat is None:
        return Path(out_dir) / cell.stack / f"{cell.id}.json"
    return Path(out_dir) / cell.stack / REPEATS_DIR / f"{cell.run_id}.json"

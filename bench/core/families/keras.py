"""The Keras family's settings: ``model.fit`` on the four Keras stacks (``bench.models.engines.keras.epochs``) and the
paper suite's step-timed Keras tasks (``bench.models.engines.keras.steps``). Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from bench.core.cadence import Cadence
from bench.core.settings import (
    AUGMENT_HELP,
    JIT_HELP,
    PIPELINE_HELP,
    PRECISION_HELP,
    STEP_SYNC_HELP,
    SYNC_HELP,
    TF32_HELP,
    TF32_MODES,
    Settings,
    knob,
)
from bench.core.stacks import Stack

_ROW_LSTM = ("mnist_hierarchical_rnn's Keras model (the only workload that takes it): time_distributed (default) is "
             "its script's TimeDistributed(LSTM), which Keras 3 runs as 28 calls of the row LSTM, one per image row, "
             "and tf.keras and Keras 2.0.8 as one call on the rows reshaped into the batch; reshape writes 2017's form "
             "out on any Keras: (B*28, 28, 1), one call of the same LSTM, back to (B, 28, 128), the same weights. The "
             "record's settings.row_lstm_form says which form ran, measured")
#: How Keras' fit reports each batch's progress (the ``progress`` knob): ``keras_tqdm``, the 2017 comparison's
#: notebooks' ``fit(verbose=0, callbacks=[TQDMNotebookCallback(...)])``; ``bar``, Keras' own progress bar
#: (``verbose=1``: the Keras 2.0.8 example scripts, and Keras' default); ``none``, ``verbose=0`` and no callback.
PROGRESS_FORMS = ("keras_tqdm", "bar", "none")
_PROGRESS = ("how Keras fit reports each batch's progress; unset: the workload's source (classic: keras_tqdm, as the "
             "2017 comparison's notebooks ran fit, e.g. keras_perf_test_mnist_mlp.ipynb@fa5f333:156 of "
             "github.com/jasmeetsb/deep-learning-keras-projects; tuning: bar, Keras' own default verbose); "
             "keras_tqdm: fit(verbose=0) and a callback whose on_batch_end reads every batch's logs and keeps their "
             "running means, as keras_tqdm's TQDMNotebookCallback did (keras_tqdm/tqdm_callback.py@v2.0.1:110-122, "
             "135-149), without drawing a bar; bar: fit(verbose=1), Keras' progress bar, written to a discarded "
             "stream (the Keras 2.0.8 example scripts' fit; the classic default before record schema 4); none: "
             "fit(verbose=0), no per-batch callback. On Keras 3's JAX and PyTorch backends a callback with a "
             "batch-end hook turns off Keras' asynchronous dispatch of batch-end callbacks "
             "(keras/src/callbacks/callback_list.py@v3.15.1:59-84), so keras_tqdm reads the logs on the training "
             "thread every step, where the bar's are read in Keras' callback thread pool; TensorFlow and tf.keras "
             "read them on the training thread under keras_tqdm and bar. settings.progress records the form that ran, "
             "settings.verbose what fit got")

#: The data pipelines made by tf.data, which only the TensorFlow backend runs as its source did.
TF_ONLY_PIPELINES = ("tf_data_numpy", "tf_data_tensors")


def _jit_problem(jit_compile: bool | str | None, stack: Stack) -> str | None:
    if jit_compile == "auto" and stack.keras_major == 2:
        return "jit_compile='auto' exists only in Keras 3 (tf.keras takes True or False)"
    return None


@dataclass(frozen=True)
class KerasEpochSettings(Settings):
    """``model.fit`` on a Keras stack (``bench.models.engines.keras.epochs``), as the tuning study varied it."""

    engine: ClassVar[str] = "keras"
    augment_data: ClassVar[dict[str, Any]] = {"data_pipeline": "numpy_fit"}
    model_knobs: ClassVar[dict[str, str]] = {
        "row_lstm": "mnist_hierarchical_rnn's Keras model (how its row LSTM meets the image rows)"}
    data_pipeline: str = knob("numpy_fit", ("numpy_fit", "tf_data_numpy", "tf_data_tensors", "tensors_fit"),
                              PIPELINE_HELP)
    # None: the workload's source decides (``Workload.augmentation``)
    augment: bool | None = knob(None, bool, AUGMENT_HELP)
    steps_per_execution: int = knob(
        1, int, "Keras: model.compile's steps_per_execution, the most steps one call of the compiled train function "
                "runs; Keras ends a call at the epoch's last batch, so an epoch of fewer steps runs whole in one call "
                "(the tuning study's 512 at batch 256: 235 steps a call). settings.steps_per_call records what a call "
                "ran")
    # None: Keras' own default, which differs between Keras 2 (off) and Keras 3 ('auto')
    jit_compile: bool | str | None = knob(None, (False, True, "auto"), JIT_HELP)
    precision: str = knob("float32", ("float32", "mixed_float16", "mixed_bfloat16"), PRECISION_HELP)
    tf32: str = knob("default", TF32_MODES, TF32_HELP)
    sync: str = knob("epoch", Cadence, SYNC_HELP)
    # a model knob (model_knobs): bench.models.workloads.mnist_hierarchical_rnn.models.build_keras, the default its
    # script's layer
    row_lstm: str = knob("time_distributed", ("time_distributed", "reshape"), _ROW_LSTM)
    # None: the workload's source decides (``Workload.progress``)
    progress: str | None = knob(None, PROGRESS_FORMS, _PROGRESS)

    def stack_problem(self, stack: Stack) -> str | None:
        """Keras 3's 'auto' XLA on tf.keras; a tf.data pipeline off the TensorFlow backend; several steps per
        execution on Keras' PyTorch backend."""
        reason = _jit_problem(self.jit_compile, stack)
        if reason:
            return reason
        if self.data_pipeline in TF_ONLY_PIPELINES and stack.backend != "tensorflow":
            # Every Keras 3 image carries TensorFlow (keras-hub needs it), but off the GPU: a tf.data
            # pipeline there would feed from the host, which is not what the source measured.
            return (f"{self.data_pipeline} needs tf.data on the TensorFlow backend (the source ran it only "
                    f"there); {stack.id} keeps TensorFlow off the GPU")
        if self.steps_per_execution > 1 and stack.backend == "torch":
            return "Keras' PyTorch backend requires steps_per_execution=1"
        return None


@dataclass(frozen=True)
class KerasStepSettings(Settings):
    """A step-timed Keras task (``paper`` suite, ``bench.models.engines.keras.steps``).

    ``jit_compile`` None (the default) requests, cell by cell, what keras-benchmarks v0.0.5 requested
    (``bench.core.reference.keras_benchmarks.SOURCE_JIT``: ``use_jit()`` in some cells, nothing, i.e. Keras' own
    default, in SAM predict, SD fit and generate); True, False or "auto" is a named variant that requests
    exactly that in every cell."""

    engine: ClassVar[str] = "keras"
    # None: the source's request per cell (bench.core.reference.keras_benchmarks); set: the same value in every cell
    jit_compile: bool | str | None = knob(None, (False, True, "auto"), JIT_HELP)
    tf32: str = knob("default", TF32_MODES, TF32_HELP)
    sync: str = knob("step", ("step",), STEP_SYNC_HELP)

    def stack_problem(self, stack: Stack) -> str | None:
        """Keras 3's 'auto' XLA on tf.keras."""
        return _jit_problem(self.jit_compile, stack)

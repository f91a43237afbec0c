"""The Keras family's settings: ``model.fit`` on the four Keras stacks (``bench.run.engines.keras.fit``) and the
paper suite's step-timed Keras tasks (``bench.run.engines.keras.steps``). Standard library only.
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
_VERBOSE = ("Keras fit's verbose: 1 (default: the 2017 scripts' fit(verbose=1), examples/mnist_mlp.py@2.0.8:53, and "
            "Keras' own 'auto') draws the progress bar, written to a discarded stream (not the cell's log); its "
            "ProgbarLogger reads the logs back every batch: a device-to-host fetch per step (Keras 3 on JAX and "
            "PyTorch runs it in Keras' callback thread pool, on TensorFlow and tf.keras on the training thread), "
            "whatever the sync cadence; 0 fetches the logs only at epoch ends")

#: The data pipelines made by tf.data, which only the TensorFlow backend runs as its source did.
TF_ONLY_PIPELINES = ("tf_data_numpy", "tf_data_tensors")


def _jit_problem(jit_compile: bool | str | None, stack: Stack) -> str | None:
    if jit_compile == "auto" and stack.keras_major == 2:
        return "jit_compile='auto' exists only in Keras 3 (tf.keras takes True or False)"
    return None


@dataclass(frozen=True)
class KerasFitSettings(Settings):
    """``model.fit`` on a Keras stack (``bench.run.engines.keras.fit``), as the tuning study varied it."""

    engine: ClassVar[str] = "keras"
    augment_data: ClassVar[dict[str, Any]] = {"data_pipeline": "numpy_fit"}
    model_knobs: ClassVar[dict[str, str]] = {
        "row_lstm": "mnist_hierarchical_rnn's Keras model (how its row LSTM meets the image rows)"}
    data_pipeline: str = knob("numpy_fit", ("numpy_fit", "tf_data_numpy", "tf_data_tensors", "tensors_fit"),
                              PIPELINE_HELP)
    # None: the workload's source decides (``Workload.augmentation``)
    augment: bool | None = knob(None, bool, AUGMENT_HELP)
    steps_per_execution: int = knob(
        1, int, "Keras: steps run per call of the compiled train function (Keras caps it at the epoch)")
    # None: Keras' own default, which differs between Keras 2 (off) and Keras 3 ('auto')
    jit_compile: bool | str | None = knob(None, (False, True, "auto"), JIT_HELP)
    precision: str = knob("float32", ("float32", "mixed_float16", "mixed_bfloat16"), PRECISION_HELP)
    tf32: str = knob("default", TF32_MODES, TF32_HELP)
    sync: str = knob("epoch", Cadence, SYNC_HELP)
    # a model knob (model_knobs): bench.run.workloads.classic.hrnn_keras, the default its script's layer
    row_lstm: str = knob("time_distributed", ("time_distributed", "reshape"), _ROW_LSTM)
    verbose: int = knob(1, (1, 0), _VERBOSE)

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
    """A step-timed Keras task (``paper`` suite, ``bench.run.engines.keras.steps``).

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

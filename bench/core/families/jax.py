"""The plain-JAX family's settings: a plain JAX training loop over a Flax NNX model
(``bench.models.engines.jax.epochs``). It has no step-timed engine. Standard library only.
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
    SYNC_HELP,
    TF32_HELP,
    TF32_MODES,
    Settings,
    knob,
)


@dataclass(frozen=True)
class JaxEpochSettings(Settings):
    """A plain JAX training loop: a Flax NNX model and an optax optimizer (``bench.models.engines.jax.epochs``)."""

    engine: ClassVar[str] = "jax"
    augment_data: ClassVar[dict[str, Any]] = {"data_pipeline": "numpy_batches"}
    data_pipeline: str = knob("numpy_batches", ("numpy_batches", "device_put_once", "tf_data_numpy"), PIPELINE_HELP)
    augment: bool | None = knob(None, bool, AUGMENT_HELP)
    jit_compile: bool = knob(True, bool, JIT_HELP)
    precision: str = knob("float32", ("float32", "bfloat16"), PRECISION_HELP)
    tf32: str = knob("default", TF32_MODES, TF32_HELP)
    sync: str = knob("epoch", Cadence, SYNC_HELP)

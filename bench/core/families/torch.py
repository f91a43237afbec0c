"""The PyTorch family's settings: a plain PyTorch training loop (``bench.models.engines.torch.epochs``) and the paper
suite's step-timed PyTorch tasks (``bench.models.engines.torch.steps``). Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from bench.core.cadence import Cadence
from bench.core.settings import (
    AUGMENT_HELP,
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

_COMPILE = "PyTorch: torch.compile mode applied to the model (none = eager)"


@dataclass(frozen=True)
class TorchEpochSettings(Settings):
    """A plain PyTorch training loop (``bench.models.engines.torch.epochs``), as the tuning study varied it."""

    engine: ClassVar[str] = "torch"
    augment_data: ClassVar[dict[str, Any]] = {"data_pipeline": "tensors_on_device", "num_workers": 0,
                                              "preload": False}
    data_pipeline: str = knob("tensors_on_device",
                              ("tensors_on_device", "tensor_dataset", "torchvision_dataset_transforms"), PIPELINE_HELP)
    augment: bool | None = knob(None, bool, AUGMENT_HELP)
    num_workers: int = knob(0, int, "DataLoader worker processes (PyTorch)")
    # PyTorch's DataLoader defaults (False), as the tuning post ran; True: a named variant (loader_kwargs)
    pin_memory: bool = knob(False, bool, "DataLoader pin_memory: page-locked host batches (CUDA only)")
    persistent_workers: bool = knob(False, bool, "DataLoader persistent_workers: workers kept across epochs")
    preload: bool = knob(False, bool, "tensor_dataset: tensors placed on the device before training "
                                      "(the study's time_preload)")
    compile: str = knob("none", ("none", "default", "reduce-overhead", "max-autotune"), _COMPILE)
    precision: str = knob("float32", ("float32", "float16_autocast", "bfloat16_autocast"), PRECISION_HELP)
    grad_scaler: bool = knob(False, bool, "PyTorch: torch.amp.GradScaler with float16 autocast")
    # One knob for PyTorch's two: float32_matmul_precision and allow_tf32 are the same switch in torch 2.13
    # (setting one rewrites the other), so a second knob could only undo the first.
    tf32: str = knob("default", TF32_MODES, TF32_HELP)
    sync: str = knob("epoch", Cadence, SYNC_HELP)

    def stack_problem(self, stack: Stack) -> str | None:
        """The loader knobs that make no sense together (on any PyTorch stack)."""
        if self.grad_scaler and self.precision != "float16_autocast":
            return "grad_scaler only applies to float16 autocast"
        if self.num_workers and self.data_pipeline == "tensors_on_device":
            return "num_workers needs a DataLoader pipeline"
        if self.persistent_workers and not self.num_workers:
            return "persistent_workers needs num_workers > 0"
        if self.pin_memory and (self.data_pipeline == "tensors_on_device" or self.preload):
            return "pin_memory applies to host batches of a DataLoader pipeline (not preloaded)"
        if self.preload and self.data_pipeline != "tensor_dataset":
            return "preload applies to the tensor_dataset pipeline only"
        if self.preload and self.num_workers:
            return "DataLoader workers cannot share tensors already on the GPU (preload with num_workers > 0)"
        return None


@dataclass(frozen=True)
class TorchStepSettings(Settings):
    """A step-timed PyTorch task (``paper`` suite, ``bench.models.engines.torch.steps``)."""

    engine: ClassVar[str] = "torch"
    compile: str = knob("none", ("none", "default", "reduce-overhead", "max-autotune"), _COMPILE)
    tf32: str = knob("default", TF32_MODES, TF32_HELP)
    sync: str = knob("step", ("step",), STEP_SYNC_HELP)

"""The settings (knobs) a cell may set, per engine, and the combinations that make no sense.

Names follow the field and the tuning study (``../shared/reference/mnist_cnn_tuning_4060ti.csv``).
``check`` runs before any framework is imported; an invalid combination becomes an ``unsupported``
record with the reason (a sweep never crashes on one).
"""

from __future__ import annotations

from typing import Any

from bench.stacks import Stack

#: Allowed values per knob and engine; ``int`` means any positive integer, ``bool`` true/false.
KNOBS: dict[str, dict[str, Any]] = {
    "keras": {
        "data_pipeline": ("numpy_fit", "tf_data_numpy", "tf_data_tensors", "tensors_fit"),
        "steps_per_execution": int,
        "jit_compile": (False, True, "auto"),
        "precision": ("float32", "mixed_float16", "mixed_bfloat16"),
        "tf32": bool,
    },
    "torch": {
        "data_pipeline": ("tensors_on_device", "tensor_dataset", "torchvision_dataset_transforms"),
        "num_workers": int,
        "preload": bool,
        "compile": ("none", "default", "reduce-overhead", "max-autotune"),
        "matmul_precision": ("highest", "high", "medium"),
        "precision": ("float32", "float16_autocast", "bfloat16_autocast"),
        "grad_scaler": bool,
        "tf32": bool,
    },
}

#: Values a knob takes when a cell does not set it (settings equal to these are dropped from variant names).
#: Keras' jit_compile has no entry: its default differs between Keras 2 (off) and Keras 3 ('auto').
DEFAULTS: dict[str, dict[str, Any]] = {
    "keras": {"data_pipeline": "numpy_fit", "steps_per_execution": 1, "precision": "float32", "tf32": False},
    "torch": {"data_pipeline": "tensors_on_device", "num_workers": 0, "preload": False, "compile": "none",
              "matmul_precision": "highest", "precision": "float32", "grad_scaler": False, "tf32": False},
}

#: What each knob means (README and ``bench fields``).
DOCS: dict[str, str] = {
    "data_pipeline": "how batches reach the model: numpy_fit (NumPy arrays to fit), tf_data_numpy / "
                     "tf_data_tensors (tf.data from arrays or tensors, shuffle, batch and prefetch with AUTOTUNE), "
                     "tensors_fit (backend tensors preloaded on the device, to fit), tensors_on_device (PyTorch: "
                     "tensors on the device, a shuffled index per step), tensor_dataset (TensorDataset + "
                     "DataLoader), torchvision_dataset_transforms (a per-item dataset with a ToTensor-style transform)",
    "num_workers": "DataLoader worker processes (PyTorch)",
    "preload": "tensor_dataset: tensors placed on the device before training (the study's time_preload)",
    "steps_per_execution": "Keras: steps run per call of the compiled train function (Keras caps it at the epoch)",
    "jit_compile": "Keras: XLA compilation of the train step (False, True, or Keras 3's 'auto')",
    "precision": "float32, Keras mixed_float16/mixed_bfloat16 policies, or PyTorch autocast fp16/bf16",
    "compile": "PyTorch: torch.compile mode applied to the model (none = eager)",
    "matmul_precision": "PyTorch: torch.set_float32_matmul_precision ('high' allows TF32)",
    "grad_scaler": "PyTorch: torch.amp.GradScaler with float16 autocast",
    "tf32": "TF32 for float32 matmuls/convolutions (off by default, as the reference runs)",
}

TF_ONLY_PIPELINES = ("tf_data_numpy", "tf_data_tensors")


def tf32_requested(settings: dict[str, Any]) -> bool:
    """Whether a cell's knobs ask for TF32 math: ``tf32: true``, or PyTorch's ``matmul_precision`` 'high' or
    'medium' (which let float32 matmuls use TF32). Off unless asked, as the reference runs."""
    return settings.get("tf32") is True or settings.get("matmul_precision") in ("high", "medium")


def _valid_value(allowed, value) -> bool:
    if allowed is int:
        return isinstance(value, int) and not isinstance(value, bool) and value > 0
    if allowed is bool:
        return isinstance(value, bool)
    return any(value == a and type(value) is type(a) for a in allowed)


#: The knobs the step-timed engines (``paper`` suite, ``bench.engines.*_steps``) honour, per engine.
STEP_KNOBS = {"keras": ("jit_compile", "tf32"), "torch": ("compile", "tf32")}


def check(stack: Stack, settings: dict[str, Any], step_timed: bool = False) -> str | None:
    """Why ``settings`` cannot run on ``stack`` (None when they can). Pure: imports no framework.

    ``step_timed``: the cell is a step-timed workload, whose engines honour only ``STEP_KNOBS``.
    """
    allowed = KNOBS[stack.engine]
    if step_timed:
        ignored = sorted(set(settings) - set(STEP_KNOBS[stack.engine]))
        if ignored:
            return (f"setting(s) {', '.join(ignored)} not honoured by the step-timed {stack.engine} engine "
                    f"(it takes: {', '.join(STEP_KNOBS[stack.engine])})")
    for key, value in settings.items():
        if key not in allowed:
            return f"setting {key!r} does not apply to the {stack.engine} engine (it knows: {', '.join(allowed)})"
        if not _valid_value(allowed[key], value):
            want = allowed[key].__name__ if isinstance(allowed[key], type) else ", ".join(map(repr, allowed[key]))
            return f"{key}={value!r} is not valid; expected {want}"
    get = settings.get
    if stack.engine == "keras":
        if get("data_pipeline") in TF_ONLY_PIPELINES and stack.backend != "tensorflow":
            # Every Keras 3 image carries TensorFlow (keras-hub needs it), but off the GPU: a tf.data
            # pipeline there would feed from the host, which is not what the source measured.
            return (f"{get('data_pipeline')} needs tf.data on the TensorFlow backend (the source ran it only "
                    f"there); {stack.id} keeps TensorFlow off the GPU")
        if get("steps_per_execution", 1) > 1 and stack.backend == "torch":
            return "Keras' PyTorch backend requires steps_per_execution=1"
        if get("jit_compile") == "auto" and stack.keras_major == 2:
            return "jit_compile='auto' exists only in Keras 3 (tf.keras takes True or False)"
    else:
        if get("grad_scaler") and get("precision", "float32") != "float16_autocast":
            return "grad_scaler only applies to float16 autocast"
        pipeline = get("data_pipeline", "tensors_on_device")
        if get("num_workers") and pipeline == "tensors_on_device":
            return "num_workers needs a DataLoader pipeline"
        if get("preload") and pipeline != "tensor_dataset":
            return "preload applies to the tensor_dataset pipeline only"
        if get("preload") and get("num_workers"):
            return "DataLoader workers cannot share tensors already on the GPU (preload with num_workers > 0)"
    return None


def variant_name(settings: dict[str, Any]) -> str:
    """A stable, file-name-safe variant id from settings: ``key=value`` pairs joined by ``+``."""
    if not settings:
        return "default"
    parts = []
    for key in sorted(settings):
        value = settings[key]
        text = str(value).lower() if isinstance(value, bool) else str(value)
        parts.append(f"{key}={text}")
    return "+".join(parts)

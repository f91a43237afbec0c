"""What a family's typed settings are made of: ``Settings`` (a frozen dataclass whose fields are knobs), ``knob`` (a
field with its default, allowed values and meaning), ``SettingsError``, and the meaning of the knobs several families
share. Standard library only (the host validates a cell's settings before any framework is imported).

Each family declares its settings classes in ``bench.core.families.<name>``; ``bench.core.knobs`` derives every
list of knobs from the registry, ``bench.core.families.FAMILIES``.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from bench.core.cadence import Cadence
from bench.core.stacks import Stack

#: What the knobs several families share mean (``bench knobs``; a knob's text is the same in every family).
PIPELINE_HELP = ("how batches reach the model: numpy_fit (NumPy arrays to fit), tf_data_numpy / tf_data_tensors "
                 "(tf.data from arrays or tensors, shuffle, batch and prefetch with AUTOTUNE), tensors_fit (backend "
                 "tensors preloaded on the device, to fit), tensors_on_device (PyTorch: tensors on the device, a "
                 "shuffled index per step), tensor_dataset (TensorDataset + DataLoader), "
                 "torchvision_dataset_transforms (a per-item dataset with a ToTensor-style transform); JAX: "
                 "numpy_batches (NumPy arrays sliced per step on the host, each batch moved to the device by the "
                 "jitted step), device_put_once (the whole set placed on the device first, a shuffled index per "
                 "step), tf_data_numpy (tf.data on the CPU, as above, read as NumPy batches)")
PRECISION_HELP = ("float32, Keras mixed_float16/mixed_bfloat16 policies, PyTorch autocast fp16/bf16, or JAX bfloat16 "
                  "(Flax's dtype=bfloat16 with param_dtype=float32: float32 parameters, bfloat16 compute)")
TF32_HELP = ("TF32 for float32 matmuls and convolutions: default = each framework's shipped math mode (TensorFlow and "
             "JAX: TF32 on; PyTorch: matmul off, cuDNN convolutions on), as the sources ran; off = strict FP32 "
             "(NVIDIA_TF32_OVERRIDE=0 plus the framework switches); on = TF32 for matmuls and convolutions in every "
             "framework (PyTorch: float32_matmul_precision 'high', the tuning study's knob)")
#: The tf32 knob's values. ``default`` is the sources' method: keras-benchmarks v0.0.5 ``shell/run.sh`` sets no
#: NVIDIA_TF32_OVERRIDE (it first appears in v0.0.6, commit f9792f0), the Keras 2.0.8 examples set nothing, and
#: the tuning study changed only PyTorch's ``set_float32_matmul_precision`` (our ``on`` on that stack).
TF32_MODES = ("default", "on", "off")
JIT_HELP = ("XLA compilation of the train step: Keras (False, True, or Keras 3's 'auto'; unset in the epoch suites: "
            "Keras' own default: on Keras 2 (tf-keras) the model's step off but each optimizer's update step under XLA "
            "on a GPU (tf-keras optimizers' own jit_compile=True, tf_keras/src/optimizers/optimizer.py@2.21.0:49, "
            "59-67); 'auto' on Keras 3, which turns XLA on for JAX always, for TensorFlow on a GPU, never for PyTorch "
            "(keras/src/trainers/trainer.py@v3.15.1:256-275); the 2017 scripts had no XLA: --set jit_compile=false is "
            "that variant, and turns tf-keras optimizers' XLA off too; settings.jit_compile records what the model "
            "compiled with, settings.optimizer.jit_compile what a tf-keras optimizer did); JAX "
            "(jax.jit of the step, True by default; False runs it op by op)")
SYNC_HELP = ("timing cadence: a device barrier and a clock read at epoch edges only (epoch), after every N steps "
             "(every:N: the spread is over windows) or after every step (step; the PyTorch loop also reads the loss "
             "back each step, and Keras, given a batch hook, reads its logs each step under every:N too)")
STEP_SYNC_HELP = "paper suite: a barrier and a clock read after every step, as its source timed them"
AUGMENT_HELP = ("the workload's real-time augmentation of its training images, on the host, per image, by one "
                "background worker (cifar10_cnn: its 2017 script's shifts and flips); unset: on where the source had "
                "it; false: off (the images as stored)")


def knob(default: Any, allowed: Any, help: str) -> Any:
    """A settings field: its default, its allowed values (a tuple; ``int``: any positive integer; ``bool``;
    ``Cadence``: a cadence string) and its help text. A default of None means "the engine's own default for the
    stack" (documented)."""
    return field(default=default, metadata={"allowed": allowed, "help": help})


class SettingsError(ValueError):
    """A setting that does not exist for the engine, or a value it does not allow (the message says which)."""


_S = TypeVar("_S", bound="Settings")


@dataclass(frozen=True)
class Settings:
    """The typed settings of one engine family: each field is a knob with its default, allowed values and
    help (``knob``). ``from_dict`` validates a cell's settings; the record's ``settings`` block holds what
    took effect."""

    #: The family these settings belong to (a stack's ``family``).
    engine: ClassVar[str] = ""
    #: The data knobs at the values a workload's source augmentation stands for (a fit class's; empty: none):
    #: another data pipeline with the augmentation on is refused (``bench.core.knobs.augmentation_problem``).
    augment_data: ClassVar[dict[str, Any]] = {}
    #: Knobs that change a workload's model -> the model they change (``bench.core.knobs.MODEL_KNOBS``).
    model_knobs: ClassVar[dict[str, str]] = {}

    @classmethod
    def allowed(cls) -> dict[str, Any]:
        """Knob name -> allowed values (a tuple, ``int`` or ``bool``)."""
        return {f.name: f.metadata["allowed"] for f in fields(cls)}

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """The fixed defaults (a field whose default is None depends on the stack and is left out)."""
        return {f.name: f.default for f in fields(cls) if f.default is not MISSING and f.default is not None}

    @classmethod
    def is_default(cls, key: str, value: Any) -> bool:
        """Whether ``value`` is knob ``key``'s fixed default, of the default's own type (``0`` for a knob whose
        default is 0 even where its allowed values, ``int``, are the positive integers; ``False`` is not ``0``)."""
        default = cls.defaults().get(key, MISSING)
        return default is not MISSING and type(value) is type(default) and value == default

    @classmethod
    def help(cls) -> dict[str, str]:
        """Knob name -> what it means."""
        return {f.name: f.metadata["help"] for f in fields(cls)}

    @classmethod
    def problem(cls, settings: dict[str, Any]) -> str | None:
        """Why ``settings`` are not valid for this engine (None when they are)."""
        allowed = cls.allowed()
        for key, value in settings.items():
            if key not in allowed:
                return f"setting {key!r} does not apply to the {cls.engine} engine (it knows: {', '.join(allowed)})"
            if not cls.is_default(key, value) and not valid_value(allowed[key], value):
                hint = (" (YAML reads an unquoted on/off as a boolean: quote it)"
                        if isinstance(value, bool) and isinstance(allowed[key], tuple) and "on" in allowed[key] else "")
                return f"{key}={value!r} is not valid; expected {describe_allowed(allowed[key])}{hint}"
        return None

    @classmethod
    def from_dict(cls: type[_S], settings: dict[str, Any]) -> _S:
        """The typed settings of a cell (unset knobs take their defaults).

        Raises:
            SettingsError: an unknown knob or a value it does not allow.
        """
        reason = cls.problem(settings)
        if reason:
            raise SettingsError(reason)
        return cls(**settings)

    def stack_problem(self, stack: Stack) -> str | None:
        """Why these (valid) settings cannot run on ``stack`` (None when they can): the family's own rules for
        combinations of knobs and stacks. Pure: imports no framework."""
        return None


def describe_allowed(allowed: Any) -> str:
    """A knob's allowed values as text (``bench knobs``, error messages)."""
    if allowed is Cadence:
        return Cadence.SYNTAX
    return allowed.__name__ if isinstance(allowed, type) else ", ".join(map(repr, allowed))


def valid_value(allowed: Any, value: Any) -> bool:
    """Whether ``value`` is one of ``allowed`` (a knob's allowed values, as ``knob`` takes them)."""
    if allowed is Cadence:
        return Cadence.accepts(value)
    if allowed is int:
        return isinstance(value, int) and not isinstance(value, bool) and value > 0
    if allowed is bool:
        return isinstance(value, bool)
    return any(value == a and type(value) is type(a) for a in allowed)

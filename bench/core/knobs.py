"""The settings (knobs) a cell may set, per engine, and the combinations that make no sense.

Names follow the field and the tuning study (``../shared/reference/mnist_cnn_tuning_4060ti.csv``).
``check`` runs before any framework is imported; an invalid combination becomes an ``unsupported``
record with the reason (a sweep never crashes on one).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from bench.core.cadence import Cadence
from bench.core.stacks import Stack

_PIPELINE = ("how batches reach the model: numpy_fit (NumPy arrays to fit), tf_data_numpy / tf_data_tensors "
             "(tf.data from arrays or tensors, shuffle, batch and prefetch with AUTOTUNE), tensors_fit (backend "
             "tensors preloaded on the device, to fit), tensors_on_device (PyTorch: tensors on the device, a "
             "shuffled index per step), tensor_dataset (TensorDataset + DataLoader), torchvision_dataset_transforms "
             "(a per-item dataset with a ToTensor-style transform); JAX: numpy_batches (NumPy arrays sliced per "
             "step on the host, each batch moved to the device by the jitted step), device_put_once (the whole set "
             "placed on the device first, a shuffled index per step), tf_data_numpy (tf.data on the CPU, as above, "
             "read as NumPy batches)")
_PRECISION = ("float32, Keras mixed_float16/mixed_bfloat16 policies, PyTorch autocast fp16/bf16, or JAX bfloat16 "
              "(Flax's dtype=bfloat16 with param_dtype=float32: float32 parameters, bfloat16 compute)")
_TF32 = ("TF32 for float32 matmuls and convolutions: default = each framework's shipped math mode (TensorFlow and "
         "JAX: TF32 on; PyTorch: matmul off, cuDNN convolutions on), as the sources ran; off = strict FP32 "
         "(NVIDIA_TF32_OVERRIDE=0 plus the framework switches); on = TF32 for matmuls and convolutions in every "
         "framework (PyTorch: float32_matmul_precision 'high', the tuning study's knob)")
#: The tf32 knob's values. ``default`` is the sources' method: keras-benchmarks v0.0.5 ``shell/run.sh`` sets no
#: NVIDIA_TF32_OVERRIDE (it first appears in v0.0.6, commit f9792f0), the Keras 2.0.8 examples set nothing, and
#: the tuning study changed only PyTorch's ``set_float32_matmul_precision`` (our ``on`` on that stack).
TF32_MODES = ("default", "on", "off")
_JIT = ("XLA compilation of the train step: Keras (False, True, or Keras 3's 'auto'; unset in the fit suites: "
        "Keras' own default, off on Keras 2 and 'auto' on Keras 3, which turns XLA on for JAX always, for TensorFlow "
        "on a GPU, never for PyTorch (keras/src/trainers/trainer.py@v3.15.1:256-275); the 2017 scripts had no XLA: "
        "--set jit_compile=false is that variant; settings.jit_compile records what the model compiled with); JAX "
        "(jax.jit of the step, True by default; False runs it op by op)")
_COMPILE = "PyTorch: torch.compile mode applied to the model (none = eager)"
_SYNC = ("timing cadence: a device barrier and a clock read at epoch edges only (epoch), after every N steps "
         "(every:N: the spread is over windows) or after every step (step; the PyTorch loop also reads the loss "
         "back each step, and Keras, given a batch hook, reads its logs each step under every:N too)")

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
_STEP_SYNC = "paper suite: a barrier and a clock read after every step, as its source timed them"
_AUGMENT = ("the workload's real-time augmentation of its training images, on the host, per image, by one "
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

    engine: ClassVar[str] = ""

    @classmethod
    def allowed(cls) -> dict[str, Any]:
        """Knob name -> allowed values (a tuple, ``int`` or ``bool``)."""
        return {f.name: f.metadata["allowed"] for f in fields(cls)}

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """The fixed defaults (a field whose default is None depends on the stack and is left out)."""
        return {f.name: f.default for f in fields(cls) if f.default is not MISSING and f.default is not None}

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
            if not _valid_value(allowed[key], value):
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


@dataclass(frozen=True)
class KerasFitSettings(Settings):
    """``model.fit`` on a Keras stack (``bench.run.engines.keras.fit``), as the tuning study varied it."""

    engine: ClassVar[str] = "keras"
    data_pipeline: str = knob("numpy_fit", ("numpy_fit", "tf_data_numpy", "tf_data_tensors", "tensors_fit"),
                              _PIPELINE)
    # None: the workload's source decides (``Workload.augmentation``)
    augment: bool | None = knob(None, bool, _AUGMENT)
    steps_per_execution: int = knob(
        1, int, "Keras: steps run per call of the compiled train function (Keras caps it at the epoch)")
    # None: Keras' own default, which differs between Keras 2 (off) and Keras 3 ('auto')
    jit_compile: bool | str | None = knob(None, (False, True, "auto"), _JIT)
    precision: str = knob("float32", ("float32", "mixed_float16", "mixed_bfloat16"), _PRECISION)
    tf32: str = knob("default", TF32_MODES, _TF32)
    sync: str = knob("epoch", Cadence, _SYNC)
    # a model knob (MODEL_KNOBS): bench.run.workloads.classic.hrnn_keras, the default its script's layer
    row_lstm: str = knob("time_distributed", ("time_distributed", "reshape"), _ROW_LSTM)
    verbose: int = knob(1, (1, 0), _VERBOSE)


@dataclass(frozen=True)
class TorchFitSettings(Settings):
    """A plain PyTorch training loop (``bench.run.engines.torch.fit``), as the tuning study varied it."""

    engine: ClassVar[str] = "torch"
    data_pipeline: str = knob("tensors_on_device",
                              ("tensors_on_device", "tensor_dataset", "torchvision_dataset_transforms"), _PIPELINE)
    augment: bool | None = knob(None, bool, _AUGMENT)
    num_workers: int = knob(0, int, "DataLoader worker processes (PyTorch)")
    # PyTorch's DataLoader defaults (False), as the tuning post ran; True: a named variant (loader_kwargs)
    pin_memory: bool = knob(False, bool, "DataLoader pin_memory: page-locked host batches (CUDA only)")
    persistent_workers: bool = knob(False, bool, "DataLoader persistent_workers: workers kept across epochs")
    preload: bool = knob(False, bool, "tensor_dataset: tensors placed on the device before training "
                                      "(the study's time_preload)")
    compile: str = knob("none", ("none", "default", "reduce-overhead", "max-autotune"), _COMPILE)
    precision: str = knob("float32", ("float32", "float16_autocast", "bfloat16_autocast"), _PRECISION)
    grad_scaler: bool = knob(False, bool, "PyTorch: torch.amp.GradScaler with float16 autocast")
    # One knob for PyTorch's two: float32_matmul_precision and allow_tf32 are the same switch in torch 2.13
    # (setting one rewrites the other), so a second knob could only undo the first.
    tf32: str = knob("default", TF32_MODES, _TF32)
    sync: str = knob("epoch", Cadence, _SYNC)


@dataclass(frozen=True)
class KerasStepSettings(Settings):
    """A step-timed Keras task (``paper`` suite, ``bench.run.engines.keras.steps``).

    ``jit_compile`` None (the default) requests, cell by cell, what keras-benchmarks v0.0.5 requested
    (``bench.core.reference.keras_benchmarks.SOURCE_JIT``: ``use_jit()`` in some cells, nothing, i.e. Keras' own
    default, in SAM predict, SD fit and generate); True, False or "auto" is a named variant that requests
    exactly that in every cell."""

    engine: ClassVar[str] = "keras"
    # None: the source's request per cell (bench.core.reference.keras_benchmarks); set: the same value in every cell
    jit_compile: bool | str | None = knob(None, (False, True, "auto"), _JIT)
    tf32: str = knob("default", TF32_MODES, _TF32)
    sync: str = knob("step", ("step",), _STEP_SYNC)


@dataclass(frozen=True)
class TorchStepSettings(Settings):
    """A step-timed PyTorch task (``paper`` suite, ``bench.run.engines.torch.steps``)."""

    engine: ClassVar[str] = "torch"
    compile: str = knob("none", ("none", "default", "reduce-overhead", "max-autotune"), _COMPILE)
    tf32: str = knob("default", TF32_MODES, _TF32)
    sync: str = knob("step", ("step",), _STEP_SYNC)


@dataclass(frozen=True)
class JaxFitSettings(Settings):
    """A plain JAX training loop: a Flax NNX model and an optax optimizer (``bench.run.engines.jax.fit``)."""

    engine: ClassVar[str] = "jax"
    data_pipeline: str = knob("numpy_batches", ("numpy_batches", "device_put_once", "tf_data_numpy"), _PIPELINE)
    augment: bool | None = knob(None, bool, _AUGMENT)
    jit_compile: bool = knob(True, bool, _JIT)
    precision: str = knob("float32", ("float32", "bfloat16"), _PRECISION)
    tf32: str = knob("default", TF32_MODES, _TF32)
    sync: str = knob("epoch", Cadence, _SYNC)


#: (engine, kind) -> its settings class; kind ``epochs`` (classic and tuning suites) or ``steps`` (paper).
SETTINGS: dict[tuple[str, str], type[Settings]] = {
    ("keras", "epochs"): KerasFitSettings, ("torch", "epochs"): TorchFitSettings,
    ("keras", "steps"): KerasStepSettings, ("torch", "steps"): TorchStepSettings,
    ("jax", "epochs"): JaxFitSettings,
}
#: The engines of the fit suites (classic, tuning); the step-timed paper suite has engines for keras and torch.
FIT_ENGINES = tuple(e for e, kind in SETTINGS if kind == "epochs")


def settings_class(engine: str, kind: str = "epochs") -> type[Settings]:
    """The settings class of an engine (``keras``, ``torch`` or ``jax``) and kind (``epochs`` or ``steps``).

    Raises:
        ValueError: unknown engine or kind.
    """
    try:
        return SETTINGS[(engine, kind)]
    except KeyError:
        raise ValueError(f"unknown engine {engine!r} or kind {kind!r}") from None


#: Allowed values per knob and engine (from the settings classes); ``int``: any positive integer.
KNOBS: dict[str, dict[str, Any]] = {e: SETTINGS[(e, "epochs")].allowed() for e in FIT_ENGINES}
#: Values a knob takes when a cell does not set it (settings equal to these are dropped from variant names).
#: Keras' jit_compile has no entry: its default differs between Keras 2 (off) and Keras 3 ('auto').
DEFAULTS: dict[str, dict[str, Any]] = {e: SETTINGS[(e, "epochs")].defaults() for e in FIT_ENGINES}
#: What each knob means (``bench knobs`` prints it).
#: A knob both kinds know keeps the fit engines' text (the step engines' sync takes one value).
DOCS: dict[str, str] = {k: v for cls in reversed(SETTINGS.values()) for k, v in cls.help().items()}
#: The knobs the step-timed engines (``paper`` suite) honour, per engine.
STEP_KNOBS = {e: tuple(SETTINGS[(e, "steps")].allowed()) for e, kind in SETTINGS if kind == "steps"}

TF_ONLY_PIPELINES = ("tf_data_numpy", "tf_data_tensors")


def tf32_override(settings: dict[str, Any]) -> str | None:
    """The ``NVIDIA_TF32_OVERRIDE`` a cell's process gets: ``"0"`` (cuBLAS and cuDNN never use TF32, whatever a
    framework switch says) for ``tf32: off``, else None: no override, so the framework's own switch decides, as
    in the sources (``TF32_MODES``)."""
    return "0" if settings.get("tf32") == "off" else None


def describe_allowed(allowed: Any) -> str:
    """A knob's allowed values as text (``bench knobs``, error messages)."""
    if allowed is Cadence:
        return Cadence.SYNTAX
    return allowed.__name__ if isinstance(allowed, type) else ", ".join(map(repr, allowed))


def _valid_value(allowed: Any, value: Any) -> bool:
    if allowed is Cadence:
        return Cadence.accepts(value)
    if allowed is int:
        return isinstance(value, int) and not isinstance(value, bool) and value > 0
    if allowed is bool:
        return isinstance(value, bool)
    return any(value == a and type(value) is type(a) for a in allowed)


def check(stack: Stack, settings: dict[str, Any], step_timed: bool = False) -> str | None:
    """Why ``settings`` cannot run on ``stack`` (None when they can). Pure: imports no framework.

    ``step_timed``: the cell is a step-timed workload, whose engines honour only ``STEP_KNOBS`` (an engine without
    a step engine, ``jax``, cannot run one).
    """
    if step_timed and stack.engine not in STEP_KNOBS:
        return (f"the {stack.engine} engine has no step-timed engine: the paper suite runs on "
                f"{', '.join(STEP_KNOBS)} stacks (its models are Keras and Hugging Face PyTorch models)")
    if step_timed:
        ignored = sorted(set(settings) - set(STEP_KNOBS[stack.engine]))
        if ignored:
            return (f"setting(s) {', '.join(ignored)} not honoured by the step-timed {stack.engine} engine "
                    f"(it takes: {', '.join(STEP_KNOBS[stack.engine])})")
    cls = settings_class(stack.engine, "steps" if step_timed else "epochs")
    reason = cls.problem(settings)
    if reason:
        return reason
    s = cls(**settings)
    if getattr(s, "jit_compile", None) == "auto" and stack.keras_major == 2:
        return "jit_compile='auto' exists only in Keras 3 (tf.keras takes True or False)"
    if isinstance(s, KerasFitSettings):
        if s.data_pipeline in TF_ONLY_PIPELINES and stack.backend != "tensorflow":
            # Every Keras 3 image carries TensorFlow (keras-hub needs it), but off the GPU: a tf.data
            # pipeline there would feed from the host, which is not what the source measured.
            return (f"{s.data_pipeline} needs tf.data on the TensorFlow backend (the source ran it only "
                    f"there); {stack.id} keeps TensorFlow off the GPU")
        if s.steps_per_execution > 1 and stack.backend == "torch":
            return "Keras' PyTorch backend requires steps_per_execution=1"
    if isinstance(s, TorchFitSettings):
        if s.grad_scaler and s.precision != "float16_autocast":
            return "grad_scaler only applies to float16 autocast"
        if s.num_workers and s.data_pipeline == "tensors_on_device":
            return "num_workers needs a DataLoader pipeline"
        if s.persistent_workers and not s.num_workers:
            return "persistent_workers needs num_workers > 0"
        if s.pin_memory and (s.data_pipeline == "tensors_on_device" or s.preload):
            return "pin_memory applies to host batches of a DataLoader pipeline (not preloaded)"
        if s.preload and s.data_pipeline != "tensor_dataset":
            return "preload applies to the tensor_dataset pipeline only"
        if s.preload and s.num_workers:
            return "DataLoader workers cannot share tensors already on the GPU (preload with num_workers > 0)"
    return None


#: One-flag variants of the fit suites' Keras cells that undo a default which is not the 2017 scripts' own
#: (``bench knobs``, ``bench list``): knob=value -> what it is.
FIT_VARIANTS: dict[str, str] = {
    "jit_compile=false": "no XLA, as the 2017 scripts ran; Keras 3's default 'auto' uses XLA on JAX, and on "
                         "TensorFlow on a GPU",
    "verbose=0": "no progress bar, so no per-step log fetch; the scripts ran fit(verbose=1)",
}


#: Knobs that change a workload's model -> the model they change: only a workload that takes one
#: (``Workload.keras_knobs``) may set it off its default.
MODEL_KNOBS = {"row_lstm": "mnist_hierarchical_rnn's Keras model (how its row LSTM meets the image rows)"}


def model_knob_problem(settings: dict[str, Any], workload: str, takes: tuple[str, ...]) -> str | None:
    """Why ``settings`` cannot run on ``workload``, whose model takes the model knobs ``takes`` (None when they can):
    a ``MODEL_KNOBS`` knob set off its default for a model that has no such choice. Pure: imports no framework."""
    for key in MODEL_KNOBS:
        if key in settings and key not in takes and settings[key] != KerasFitSettings.defaults()[key]:
            return f"{key}={settings[key]!r} applies only to {MODEL_KNOBS[key]}, not to {workload}'s"
    return None


def parse_assignment(text: str) -> tuple[str, Any]:
    """``KNOB=VALUE`` from the command line: the knob and its value typed as the settings classes declare it
    (``true``/``false`` a bool, digits an int, else the text), checked against every engine that knows the knob.

    Raises:
        SettingsError: no ``=``, a knob no engine has, or a value no engine allows for it (the message lists them).
    """
    key, sep, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or not key:
        raise SettingsError(f"{text!r}: expected KNOB=VALUE (bench knobs lists them)")
    value: Any = {"true": True, "false": False}.get(raw.lower(), int(raw) if raw.isdigit() else raw)
    allowed = [cls.allowed()[key] for cls in SETTINGS.values() if key in cls.allowed()]
    if not allowed:
        known = sorted({k for cls in SETTINGS.values() for k in cls.allowed()})
        raise SettingsError(f"unknown knob {key!r}; known: {', '.join(known)}")
    if not any(_valid_value(a, value) for a in allowed):
        raise SettingsError(f"{key}={raw} is not valid; expected {describe_allowed(allowed[0])}")
    return key, value


def augmentation_problem(settings: KerasFitSettings | TorchFitSettings | JaxFitSettings, workload: str,
                         has_augmentation: bool) -> str | None:
    """Why a fit cell's ``augment`` setting cannot run (None when it can). Pure: imports no framework.

    The augmentation is its own host pipeline (one background worker, per image, as the source's
    ``fit_generator``), so it takes the data knobs at their defaults: another pipeline is a variant of the
    un-augmented workload (``augment=false``).
    """
    if settings.augment is True and not has_augmentation:
        return f"augment=true: {workload}'s source has no augmentation"
    if not (has_augmentation and settings.augment is not False):
        return None
    fixed = ({"data_pipeline": "numpy_fit"} if isinstance(settings, KerasFitSettings) else
             {"data_pipeline": "numpy_batches"} if isinstance(settings, JaxFitSettings) else
             {"data_pipeline": "tensors_on_device", "num_workers": 0, "preload": False})
    changed = [f"{k}={getattr(settings, k)!r}" for k, v in fixed.items() if getattr(settings, k) != v]
    if changed:
        return (f"{workload} augments its images on the host, one worker as its source did; {', '.join(changed)} "
                "is another input pipeline: add augment=false")
    return None


def augment_in_effect(settings: KerasFitSettings | TorchFitSettings | JaxFitSettings, has_augmentation: bool) -> bool:
    """Whether a cell trains on augmented images: the workload has a source augmentation and the cell did not
    turn it off (``augment`` unset or true)."""
    return has_augmentation and settings.augment is not False


def normalise(engine: str, settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` without the keys whose value is the engine's default."""
    defaults = DEFAULTS[engine]
    def is_default(k: str, v: Any) -> bool:
        return k in defaults and defaults[k] == v and type(defaults[k]) is type(v)

    return {k: v for k, v in settings.items() if not is_default(k, v)}


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

"""Workload registry. A workload family is one module that calls ``register`` for each of its models.

Every workload gives all stacks the same small interface (the TorchBench idea): a dataset, a batch
size, an optimizer with every hyper-parameter of its source (``OptimizerSpec``), the source's augmentation if
any, a declared parameter count, and two builders with the same architecture, one for Keras (2 or 3, any
backend) and one for plain PyTorch (and, for the plain-JAX stack, a third in Flax NNX: ``build_flax``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TypeVar, get_args

from bench.core.reference.keras_benchmarks import NUM_STEPS
from bench.core.words import Size
from bench.run.datasets import Dataset


@dataclass(frozen=True)
class OptimizerSpec:
    """An optimizer and every hyper-parameter of its update rule, as the workload's source set them (Keras'
    names; each engine maps them onto its framework's optimizer and records what it built).

    Attributes:
        name: ``rmsprop``, ``adadelta`` or ``adam``.
        learning_rate: initial learning rate.
        rho: RMSprop's and Adadelta's decay of the squared-gradient average (PyTorch RMSprop's ``alpha``).
        epsilon: the fuzz factor (PyTorch's ``eps``).
        beta_1 / beta_2: Adam's moment decays.
        decay: Keras 2's per-update learning-rate decay, ``lr_t = learning_rate / (1 + decay * t)`` with t the
            updates done before this one (keras/optimizers.py@2.0.8, ``get_updates``); 0: a constant rate.
        source: where the values come from (file@tag).
        torch_rho / torch_epsilon: the PyTorch engine's ``alpha`` / ``eps`` where its source built PyTorch's
            optimizer with torch's own defaults rather than the Keras values (``for_engine``); None: the same
            values on every engine.
    """

    name: str
    learning_rate: float
    rho: float | None = None
    epsilon: float = 1e-7
    beta_1: float | None = None
    beta_2: float | None = None
    decay: float = 0.0
    source: str = ""
    torch_rho: float | None = None
    torch_epsilon: float | None = None

    def for_engine(self, engine: str) -> OptimizerSpec:
        """The spec ``engine`` (``keras``, ``torch``, ``jax``) builds: ``torch`` takes ``torch_rho`` /
        ``torch_epsilon`` where set; every other engine takes the Keras values."""
        if engine != "torch":
            return self
        return replace(self, rho=self.rho if self.torch_rho is None else self.torch_rho,
                       epsilon=self.epsilon if self.torch_epsilon is None else self.torch_epsilon)

    def hyperparameters(self) -> dict[str, float]:
        """The rule's hyper-parameters that apply to ``name`` (Keras' names), without ``source``."""
        out = {"learning_rate": self.learning_rate, "rho": self.rho, "epsilon": self.epsilon,
               "beta_1": self.beta_1, "beta_2": self.beta_2, "decay": self.decay}
        return {k: v for k, v in out.items() if v is not None}

    def describe(self) -> str:
        """One line for ``bench list``: ``RMSprop lr 0.0001 rho 0.9 eps 1e-08 decay 1e-06``."""
        names = {"rmsprop": "RMSprop", "adadelta": "Adadelta", "adam": "Adam"}
        short = {"learning_rate": "lr", "epsilon": "eps"}
        parts = [f"{short.get(k, k)} {v:g}" for k, v in self.hyperparameters().items() if k != "decay" or v]
        torch = self.for_engine("torch")
        if torch != self:
            rho = "alpha" if self.name == "rmsprop" else "rho"
            parts.append(f"(PyTorch {rho} {torch.rho:g} eps {torch.epsilon:g})")
        return f"{names.get(self.name, self.name)} {' '.join(parts)}"


#: How an augmented epoch's batches differ from Keras 2.0.8's ``fit_generator(datagen.flow(...))`` (recorded).
EPOCH_BATCHES_NOTE = (
    "ours: n // batch full batches per epoch from a fresh permutation; the source's iterator ran on across epochs "
    "(keras/preprocessing/image.py@2.0.8:709-729, one enqueuer for the whole fit: keras/engine/training.py@2.0.8:"
    "1991-2006), cycling ceil(n / batch) batches per pass, the last one partial, while an epoch took n // batch "
    "steps: cifar10 at batch 32 trains 1562 x 32 images in epoch 1 and 1561 x 32 + 16 in each later one")


def source_epoch_batch_sizes(n: int, batch_size: int, steps_per_epoch: int, epoch: int) -> list[int]:
    """The batch sizes of epoch ``epoch`` (1-based) as Keras 2.0.8's ``fit_generator`` drew them from
    ``ImageDataGenerator.flow``: one iterator for the whole fit, each pass over the ``n`` images
    ``ceil(n / batch_size)`` batches, the last one ``n % batch_size`` images when that is not 0
    (``Iterator._flow_index``, keras/preprocessing/image.py@2.0.8:709-729), ``steps_per_epoch`` batches an epoch
    (keras/engine/training.py@2.0.8:2006-2021). Arithmetic only (what ``EPOCH_BATCHES_NOTE`` states).

    Raises:
        ValueError: a non-positive size, step count or epoch.
    """
    if min(n, batch_size, steps_per_epoch, epoch) < 1:
        raise ValueError("n, batch_size, steps_per_epoch and epoch must be positive")
    per_pass = -(-n // batch_size)
    first = (epoch - 1) * steps_per_epoch
    return [min(batch_size, n - (i % per_pass) * batch_size) for i in range(first, first + steps_per_epoch)]


@dataclass(frozen=True)
class Augmentation:
    """Real-time augmentation of the training images, produced on the host while the device trains, as
    Keras 2.0.8's ``ImageDataGenerator.flow`` fed ``fit_generator`` (keras/preprocessing/image.py@2.0.8,
    keras/engine/training.py@2.0.8).

    Attributes:
        width_shift_range / height_shift_range: the largest shift, a fraction of the image's width / height;
            each image's shift is drawn uniformly from [-range, range] x size (image.py@2.0.8:555-561).
        horizontal_flip: each image is flipped left-right with probability 0.5 (image.py@2.0.8:610-612).
        fill_mode: how pixels shifted in are filled: ``nearest`` repeats the edge (image.py@2.0.8:396).
        interpolation: ``nearest``: the source resampled with ``order=0`` (image.py@2.0.8:201-206), so a
            shift of 2.6 pixels moves the image by 3.
        workers: background workers producing batches (``fit_generator(workers=1)``, training.py@2.0.8:1840).
        max_queue_size: batches they may queue ahead of the model (training.py@2.0.8:1839).
        drop_remainder: an epoch is ``n // batch`` full batches (the script's ``steps_per_epoch``), each epoch a
            fresh permutation; the source's iterator instead ran on across epochs, so most of its epochs held one
            partial batch (``source_epoch_batch_sizes``): a disclosed difference (``EPOCH_BATCHES_NOTE``).
        source: file@tag.
    """

    width_shift_range: float
    height_shift_range: float
    horizontal_flip: bool
    fill_mode: str = "nearest"
    interpolation: str = "nearest"
    workers: int = 1
    max_queue_size: int = 10
    drop_remainder: bool = True
    source: str = ""

    def record(self) -> dict[str, Any]:
        """The augmentation's parameters for a record's ``settings.augmentation`` block, with how its epochs'
        batches differ from the source's (``epoch_batches``)."""
        out = {k: v for k, v in asdict(self).items() if k != "source"}
        if self.drop_remainder:
            out["epoch_batches"] = EPOCH_BATCHES_NOTE
        return out

    def check(self, n_inputs: int, n_train: int, batch_size: int) -> None:
        """That a training set of ``n_inputs`` input arrays and ``n_train`` examples can be augmented in batches of
        ``batch_size`` (both engines' pipelines call it before building one).

        Raises:
            ValueError: more than one input, or fewer training examples than a batch (with ``drop_remainder`` an
                epoch would have no step).
        """
        if n_inputs != 1:
            raise ValueError("augmentation needs a workload with one image input")
        if self.drop_remainder and n_train < batch_size:
            raise ValueError(f"batch {batch_size} is larger than the {n_train} training examples: an augmented epoch "
                             "is n // batch full batches, none here")


@dataclass(frozen=True)
class Labels:
    """How a workload's source fed its labels to Keras, and the loss and metrics it compiled with.

    Attributes:
        form: ``one_hot`` (``keras.utils.to_categorical`` on the host before ``fit``: float32 rows of
            ``num_classes``) or ``integer`` (the class ids as stored).
        loss: the Keras loss the source compiled (``categorical_crossentropy`` on one-hot rows,
            ``sparse_categorical_crossentropy`` on integer ids).
        metrics: the Keras metrics the source compiled.
        source: file@tag:lines, or why the form is assumed.
    """

    form: str
    loss: str
    metrics: tuple[str, ...] = ("accuracy",)
    source: str = ""

    def __post_init__(self) -> None:
        if self.form not in ("one_hot", "integer"):
            raise ValueError(f"unknown label form {self.form!r}; expected one_hot or integer")


#: Integer labels with the sparse loss: the workloads whose source does not say otherwise.
INTEGER_LABELS = Labels("integer", "sparse_categorical_crossentropy", ("accuracy",),
                        "not stated by the source: integer class ids, Keras' sparse loss")


@dataclass(frozen=True)
class Workload:
    """One model of a suite.

    Attributes:
        name: workload id (CLI, CSV). suite: suite it belongs to. tasks: tasks it supports.
        dataset: dataset name for ``bench.run.datasets.load``.
        batch_size: examples per step, as published (``full`` size).
        optimizer: the optimizer and every hyper-parameter of its update rule (``OptimizerSpec``).
        params: the model's parameter count, declared (``bench list``) and checked by a test against both
            builds (Keras ``count_params``; PyTorch counting an LSTM's two bias vectors once).
        epochs: epochs per size (``smoke`` / ``full``).
        samples: training examples per size (None: the whole dataset); validation uses a quarter.
        smoke_batch_size: examples per step at ``smoke`` size when smaller than ``batch_size`` (None: the
            published batch). A smoke cell tests a code path, so its cost must not depend on how fast the
            CPU does a precision: float16 convolutions are emulated on CPUs without AVX512-FP16.
        build_keras: ``(keras_module, meta) -> keras.Model`` returning softmax probabilities.
        build_torch: ``(meta) -> torch.nn.Module`` returning logits.
        prepare: optional ``Dataset -> Dataset`` reshaping step shared by all stacks.
        torch_layout: per-input axis permutation for PyTorch (e.g. NHWC -> NCHW), or None.
        validation_split: fraction of the training data held out (when the source did that instead
            of validating on the test split).
        augmentation: the source's real-time augmentation of the training images (None: none); the
            ``augment`` knob turns it off (``bench.core.knobs``).
        source: where the architecture and hyper-parameters come from.
        notes: deliberate differences from the source.
        build_flax: ``(meta, rngs: flax.nnx.Rngs) -> nnx.Module`` returning logits from the Keras layout's
            inputs (the plain-JAX stack, ``bench.run.engines.jax``); None: the workload has no Flax
            definition yet, and its cells on that stack are recorded as unsupported.
        keras_knobs: the model knobs (``bench.core.knobs.MODEL_KNOBS``) ``build_keras`` takes, as keyword arguments
            named after them; another workload's cells that set one off its default are unsupported.
        keras_model_facts: ``(keras_module, model) -> dict`` of what the trained Keras model does that its record
            must state (measured; added to ``settings``), or None.
        labels: the label form, loss and metrics of the Keras stacks, as the source fed and compiled them
            (``Labels``; the PyTorch and Flax twins keep their idiomatic integer-label losses).
    """

    name: str
    suite: str
    dataset: str
    batch_size: int
    optimizer: OptimizerSpec
    params: int
    epochs: dict[str, int]
    samples: dict[str, int | None]
    build_keras: Callable[[Any, dict[str, Any]], Any]
    build_torch: Callable[[dict[str, Any]], Any]
    tasks: tuple[str, ...] = ("fit",)
    prepare: Callable[[Dataset], Dataset] | None = None
    torch_layout: tuple[tuple[int, ...] | None, ...] | None = None
    validation_split: float | None = None
    smoke_batch_size: int | None = None
    augmentation: Augmentation | None = None
    source: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)
    keras_knobs: tuple[str, ...] = ()
    keras_model_facts: Callable[[Any, Any], dict[str, Any]] | None = None
    labels: Labels = INTEGER_LABELS
    build_flax: Callable[[dict[str, Any], Any], Any] | None = None

    @property
    def learning_rate(self) -> float:
        """The optimizer's initial learning rate."""
        return self.optimizer.learning_rate

    def batch_for(self, size: str) -> int:
        """Examples per step at ``size`` (``smoke`` or ``full``)."""
        return self.smoke_batch_size if size == "smoke" and self.smoke_batch_size else self.batch_size

    def load_data(self, size: str, data: str = "auto") -> Dataset:
        """The workload's dataset at ``size`` (``samples[size]`` training examples; None: all), split and
        prepared as the source did: the tail of the training data held out (Keras' ``validation_split``)
        when ``validation_split`` is set, else a validation set of a quarter the training size.

        ``data``: ``bench.run.datasets.DATA_CHOICES`` (``auto``: real, synthetic only at smoke size), or
        ``fallback`` (real, else synthetic at any size: the fidelity check, which times the harness).

        Raises:
            whatever ``bench.run.datasets.load`` raises: an unknown dataset, ``DataUnavailable``.
        """
        from bench.run import datasets

        source = {"auto": "fallback" if size == "smoke" else "real"}.get(data, data)
        n = self.samples[size]
        if self.validation_split:
            ds = datasets.load(self.dataset, n, 0, source=source)
            k = max(int(ds.n_train * self.validation_split), 1)
            ds = Dataset(ds.name, tuple(x[:-k] for x in ds.x_train), ds.y_train[:-k],
                         tuple(x[-k:] for x in ds.x_train), ds.y_train[-k:], ds.meta, ds.source, ds.reason, ds.sha256)
        else:
            ds = datasets.load(self.dataset, n, None if n is None else max(n // 4, 1), source=source)
        return self.prepare(ds) if self.prepare else ds


@dataclass
class Job:
    """What an engine times for one task of a ``StepWorkload`` on one stack (built inside the cell).

    Attributes:
        model: the framework model (``keras.Model`` or ``torch.nn.Module``): its parameters are counted,
            and for ``fit`` trained.
        inputs / targets: one batch of host arrays for Keras ``fit``/``predict`` (None with ``call``).
        loss: Keras loss for ``fit``. optimizer: ``adamw`` or ``adam`` (Keras' defaults on every stack).
        call: ``call(model) -> result`` for one timed step when the step is not a Keras ``fit``/``predict``
            step: a PyTorch step (loss for ``fit``, which the engine back-propagates; outputs otherwise),
            a ``generate`` call (returns tokens generated per sequence), an SD denoising step.
        precision: ``float32`` or ``bfloat16`` (the dtype the weights and compute use).
        generated_tokens: tokens each ``generate`` call must produce per sequence (fixed length).
        recorded: settings the job fixed that the record's ``settings`` block must carry (e.g. generate's
            ``prompt_tokens``).
        notes: differences from the source the record's ``notes`` must carry.
    """

    model: Any
    inputs: Any = None
    targets: Any = None
    loss: Any = None
    optimizer: str | None = None
    call: Callable[[Any], Any] | None = None
    precision: str = "float32"
    generated_tokens: int | None = None
    recorded: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def checked_tokens(self, produced: Any) -> int | None:
        """``produced`` (tokens per sequence of the last ``generate`` call) when it is the fixed length, None
        for a task that generates nothing.

        Raises:
            RuntimeError: generation stopped short of (or ran past) ``generated_tokens``.
        """
        if self.generated_tokens is None:
            return None
        if produced != self.generated_tokens:
            raise RuntimeError(f"generate produced {produced} tokens per sequence, expected {self.generated_tokens} "
                               "(generation must run to the fixed length)")
        return int(produced)


def _arrays(x: Any) -> list[Any]:
    """The arrays inside a step's output: an array or tensor, or a dict/tuple/list (or a model output with
    ``values()``, like transformers' ModelOutput) of them; other leaves are left out."""
    if x is None or isinstance(x, (int, float, str)):
        return []
    if isinstance(x, dict) or (hasattr(x, "values") and callable(x.values) and not hasattr(x, "shape")):
        return [a for v in x.values() for a in _arrays(v)]
    if isinstance(x, (tuple, list)):
        return [a for v in x for a in _arrays(v)]
    return [x] if hasattr(x, "shape") else []


def check_output(task: str, produced: Any) -> dict[str, Any] | None:
    """Shapes and finiteness of the last step's output (``predict``: the model's output; ``fit`` on a loop
    that returns it: the loss). None when the step returned no array (Keras ``fit``, ``generate``).

    Returns:
        ``{"shapes": [[...], ...], "finite": True}``.

    Raises:
        RuntimeError: an output holds NaN or Inf (the model did not compute what it should; the cell fails).
    """
    import numpy as np

    arrays = _arrays(produced)
    if task == "generate" or not arrays:
        return None
    shapes, finite = [], True
    for a in arrays:
        if hasattr(a, "detach"):  # torch
            a = a.detach().float().cpu().numpy()
        a = np.asarray(a)
        shapes.append([int(d) for d in a.shape])
        if a.dtype.kind in "fc":
            finite = finite and bool(np.isfinite(a.astype(np.float32)).all())
    if not finite:
        raise RuntimeError(f"{task} produced non-finite values (NaN or Inf) in an output of shapes {shapes}")
    return {"shapes": shapes, "finite": True}


@dataclass(frozen=True)
class StepWorkload:
    """A model timed step by step on random inputs of the published shapes (the Keras 3 benchmark's method).

    Attributes:
        name / suite / source: as for ``Workload``.
        cells: the published (task, batch size) pairs; one cell each.
        model: the model class instance (a ``bench.run.workloads.paper.PaperModel``): ``config(size)``,
            ``keras_job``, ``torch_job``, ``torch_model``, ``unsupported(stack)``, ``precision`` and
            ``published_params``.
        steps: timed steps after the first (build + compile) step, per size.
    """

    name: str
    suite: str
    cells: tuple[tuple[str, int], ...]
    model: Any
    steps: dict[str, int] = field(default_factory=lambda: {"smoke": 3, "full": NUM_STEPS})
    source: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t for t, _ in self.cells))

    def batch_sizes(self, task: str) -> list[int]:
        """The published batch sizes of ``task`` (several for generate)."""
        return [b for t, b in self.cells if t == task]


WORKLOADS: dict[str, Workload | StepWorkload] = {}
SUITES: dict[str, list[str]] = {}
SIZES: tuple[Size, ...] = get_args(Size)


AnyWorkload = TypeVar("AnyWorkload", "Workload", "StepWorkload")


def register(w: AnyWorkload) -> AnyWorkload:
    """Add ``w`` to the registry (and its suite). Raises ValueError on a duplicate name."""
    if w.name in WORKLOADS:
        raise ValueError(f"workload {w.name!r} registered twice")
    WORKLOADS[w.name] = w
    SUITES.setdefault(w.suite, []).append(w.name)
    return w


def add_to_suite(suite: str, name: str) -> None:
    """List an already registered workload in another suite too."""
    if name not in WORKLOADS:
        raise KeyError(f"unknown workload {name!r}")
    SUITES.setdefault(suite, []).append(name)


def _load_families() -> None:
    from bench.run.workloads import classic, paper  # noqa: F401  (register on import)


_load_families()


def get_workload(name: str) -> Workload | StepWorkload:
    """Raises KeyError with the known names when ``name`` is unknown."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}") from None

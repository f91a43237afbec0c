"""Workload registry: one folder here per workload (or, for the paper suite, per suite), found by ``discover``.

A folder holds a ``spec.py`` (its published facts, ``published.Published``, and its registration: ``WORKLOADS``, a
tuple of ``Workload`` or ``StepWorkload`` built from ``NAMES``, the literal tuple of their names, with ``ORDER``, its
place in the registry: both read without an import by ``bench.core.workloadnames``) and the models it registers
(``models.py``: the Keras, PyTorch and Flax NNX builders of an epoch-trained workload; ``paper/``: one module per
model family). Adding a workload is adding a folder: no list elsewhere names it.

Every workload gives all stacks the same small interface, so that one harness drives every stack the same way: a
dataset, a batch size, an optimizer with every hyper-parameter of its source (``training.OptimizerSpec``), the
source's augmentation if any, a declared parameter count, and two builders with the same architecture, one for Keras
(2 or 3, any backend) and one for plain PyTorch (and, for the plain-JAX stack, a third in Flax NNX: ``build_flax``).
What a workload trains with is ``training.py``; what a step engine times, ``job.py``; what the folders share,
``common.py`` and ``flax_common.py``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar, get_args

from bench.core.reference.keras_benchmarks import NUM_STEPS
from bench.core.words import Size, Suite
from bench.core.workloadnames import spec_folders
from bench.models.datasets import Dataset
from bench.models.workloads.published import Published
from bench.models.workloads.training import INTEGER_LABELS, Augmentation, Labels, OptimizerSpec


@dataclass(frozen=True)
class Workload:
    """One model of a suite.

    Attributes:
        name: workload id (CLI, CSV). suite: suite it belongs to. tasks: tasks it supports.
        dataset: dataset name for ``bench.models.datasets.load``.
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
            inputs (the plain-JAX stack, ``bench.models.engines.jax``); None: the workload has no Flax
            definition yet, and its cells on that stack are recorded as unsupported.
        keras_knobs: the model knobs (``bench.core.knobs.MODEL_KNOBS``) ``build_keras`` takes, as keyword arguments
            named after them; another workload's cells that set one off its default are unsupported.
        keras_model_facts: ``(keras_module, model) -> dict`` of what the trained Keras model does that its record
            must state (measured; added to ``settings``), or None.
        labels: the label form, loss and metrics of the Keras stacks, as the source fed and compiled them
            (``Labels``; the PyTorch and Flax twins keep their idiomatic integer-label losses).
        progress: how the source's Keras ``fit`` reported each batch's progress, one of
            ``bench.core.families.keras.PROGRESS_FORMS``: ``bar`` (``verbose=1``, Keras' default) unless the source
            says otherwise (the classic workloads: ``keras_tqdm``, the 2017 notebooks' callback); the Keras stacks'
            ``progress`` knob, when set, replaces it.
        published: what its source publishes (parameter count, batch, epochs, optimizer, with where), which the
            tests hold this registration and every family's build to; None: a workload that states none (a test
            fails on a registered one).
    """

    #: how it is timed, the value its folder's spec states as ``TIMING`` (``bench.core.workloadnames``)
    TIMING: ClassVar[str] = "epoch"

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
    progress: str = "bar"
    published: Published | None = None
    build_flax: Callable[[dict[str, Any], Any], Any] | None = None

    @property
    def learning_rate(self) -> float:
        """The optimizer's initial learning rate."""
        return self.optimizer.learning_rate

    def batch_for(self, size: str) -> int:
        """Examples per step at ``size`` (``smoke`` or ``full``)."""
        return self.smoke_batch_size if size == "smoke" and self.smoke_batch_size else self.batch_size

    def load_data(self, size: str, data: str = "auto", samples: int | None = None) -> Dataset:
        """The workload's dataset at ``size`` (``samples`` training examples, default ``samples[size]``; None: all),
        split and prepared as the source did: the tail of the training data held out (Keras' ``validation_split``)
        when ``validation_split`` is set, else a validation set of a quarter the training size.

        ``data``: ``bench.models.datasets.DATA_CHOICES`` (``auto``: real, synthetic only at smoke size), or
        ``fallback`` (real, else synthetic at any size: the fidelity check, which times the harness).

        Raises:
            whatever ``bench.models.datasets.load`` raises: an unknown dataset, ``DataUnavailable``.
        """
        from bench.models import datasets

        source = {"auto": "fallback" if size == "smoke" else "real"}.get(data, data)
        n = samples or self.samples[size]
        if self.validation_split:
            ds = datasets.load(self.dataset, n, 0, source=source)
            k = max(int(ds.n_train * self.validation_split), 1)
            ds = Dataset(ds.name, tuple(x[:-k] for x in ds.x_train), ds.y_train[:-k],
                         tuple(x[-k:] for x in ds.x_train), ds.y_train[-k:], ds.meta, ds.source, ds.reason, ds.sha256)
        else:
            ds = datasets.load(self.dataset, n, _quarter(n), source=source)
        return self.prepare(ds) if self.prepare else ds

    def whole_dataset(self, samples: int) -> bool:
        """Whether a cap of ``samples`` training examples (``load_data``'s) loads what no cap loads: every training
        example of the dataset (``bench.models.datasets.example_counts``) and, unless ``validation_split`` holds its
        validation set out of them, a validation set (a quarter of ``samples``) of the whole test set."""
        from bench.models.datasets import example_counts

        n_train, n_test = example_counts(self.dataset)
        return samples >= n_train and (bool(self.validation_split) or (_quarter(samples) or 0) >= n_test)


def _quarter(n: int | None) -> int | None:
    """The validation examples of ``n`` training examples where the test split validates: a quarter (at least one);
    None (all of the test split) for None."""
    return None if n is None else max(n // 4, 1)


@dataclass(frozen=True)
class StepWorkload:
    """A model timed step by step on random inputs of the published shapes (the Keras 3 benchmark's method).

    Attributes:
        name / suite / source: as for ``Workload``.
        cells: the published (task, batch size) pairs; one cell each.
        model: the model class instance (a ``bench.models.workloads.paper.common.PaperModel``): ``config(size)``,
            ``keras_job``, ``torch_job``, ``torch_model``, ``unsupported(stack)``, ``precision`` and
            ``published_params``.
        steps: timed steps after the first (build + compile) step, per size.
    """

    #: as ``Workload.TIMING``
    TIMING: ClassVar[str] = "step"

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
    """Add ``w`` to the registry (and its suite). Raises ValueError on a duplicate name or a suite that
    ``bench.core.words.Suite`` does not declare (the host checks ``SUITE`` against that list)."""
    if w.name in WORKLOADS:
        raise ValueError(f"workload {w.name!r} registered twice")
    if w.suite not in get_args(Suite):
        raise ValueError(f"workload {w.name!r}: suite {w.suite!r} is not declared in bench.core.words.Suite")
    WORKLOADS[w.name] = w
    SUITES.setdefault(w.suite, []).append(w.name)
    return w


def discover(paths: Iterable[str] = __path__) -> list[str]:
    """Register the workloads of every folder in ``paths`` (folders of this package; by default its own) that holds a
    ``spec.py``: each spec's ``WORKLOADS``, the folders found and ordered by ``bench.core.workloadnames.spec_folders``
    (their spec's ``ORDER``, a number; none: after the numbered ones; then by name), the one reading of the folders,
    which the host's check of a workload's name also makes. A folder outside this package's own is importable once
    its path is on the package's ``__path__``.

    Returns:
        The names registered, in order.

    Raises:
        ValueError: a name registered twice; a spec's ``WORKLOADS`` named otherwise than its ``NAMES``, or timed
            otherwise than its ``TIMING``; ``NAMES``, ``ORDER`` or ``TIMING`` not as ``workloadnames.read_spec`` wants.
            Whatever a spec raises on import.
    """
    names: list[str] = []
    for folder in spec_folders(paths):
        spec = importlib.import_module(f"{__name__}.{folder.name}.spec")
        made = tuple(w.name for w in spec.WORKLOADS)
        if made != folder.names:
            raise ValueError(f"{spec.__name__}: WORKLOADS are named {', '.join(made)}, its NAMES "
                             f"{', '.join(folder.names)}: build them from NAMES")
        timed = {w.TIMING for w in spec.WORKLOADS}
        if timed != {folder.timing}:
            raise ValueError(f"{spec.__name__}: its WORKLOADS are {' and '.join(sorted(timed))}-timed, its TIMING "
                             f"{folder.timing!r}: StepWorkloads state TIMING = \"step\", Workloads none")
        names += [register(w).name for w in spec.WORKLOADS]
    return names


discover()


def get_workload(name: str) -> Workload | StepWorkload:
    """Raises KeyError with the known names when ``name`` is unknown."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}") from None

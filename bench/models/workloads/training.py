"""How a workload trains, whatever the stack: its optimizer and every hyper-parameter of its source
(``OptimizerSpec``), the source's real-time augmentation (``Augmentation``, with how its epochs' batches differ from
Keras 2.0.8's, ``EPOCH_BATCHES_NOTE``) and its label form, loss and metrics (``Labels``). Standard library
only: the registry (``bench.models.workloads``) and the engines import it inside and outside a cell.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any


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
        eps_in_sqrt: RMSprop's rule in the source's Keras, which the plain-JAX engine builds (optax's
            ``eps_in_sqrt``): False, ``sqrt(v) + epsilon`` (Keras 2.0.8, keras/optimizers.py@2.0.8:239); True,
            ``sqrt(v + epsilon)`` (Keras 3, keras/src/optimizers/rmsprop.py@v3.15.1:143-145). The Keras and PyTorch
            engines run their framework's own rule whatever it says.
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
    eps_in_sqrt: bool = False

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
            partial batch: a disclosed difference (``EPOCH_BATCHES_NOTE``).
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

"""What the epoch-trained workloads' folders share: Keras 2.0.8's optimizers and LSTM, the 2017 scripts' label form,
the images' layouts, and ``workload``, which builds a registration from a folder's published facts.

The classic suite is the Keras 2.0.8 ``examples/*.py`` scripts the 2017 backend comparison ran (Jasmeet Bhatia,
"Search for the fastest Deep Learning Framework supported by Keras", 2017:
https://www.kdnuggets.com/2017/09/search-fastest-keras-deep-learning-backend.html); each default is its source's, as
the cited script ran it (keras-team/keras ``examples/<name>.py@2.0.8``) and as the comparison's notebooks ran the
scripts (github.com/jasmeetsb/deep-learning-keras-projects@fa5f333,
keras-performance-comparison/keras_perf_test_<name>.ipynb: the epochs, the fit call and its progress callback,
``Workload.progress``); a workload's ``notes`` list what differs and why (also docs/suites/classic.md, "Method vs the
sources"). Framework imports happen inside the builders, so the registry imports no framework.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from bench.core.families import FAMILIES
from bench.models.datasets import Dataset
from bench.models.workloads import Workload
from bench.models.workloads.published import Published
from bench.models.workloads.training import Labels, OptimizerSpec

#: Keras 2.0.8's optimizer defaults (keras/optimizers.py@2.0.8: RMSprop line 212, Adadelta 331, Adam 401). Keras 3
#: and tf.keras changed them (epsilon 1e-7 everywhere; Adadelta's learning rate 0.001), so they are explicit.
KERAS208 = "keras/optimizers.py@2.0.8"


def rmsprop_208(learning_rate: float = 0.001, decay: float = 0.0, source: str = "") -> OptimizerSpec:
    """Keras 2.0.8's ``RMSprop(lr=0.001, rho=0.9, epsilon=1e-8, decay=0.)`` (keras/optimizers.py@2.0.8:212)."""
    return OptimizerSpec("rmsprop", learning_rate, rho=0.9, epsilon=1e-8, decay=decay,
                         source=source or f"{KERAS208}:212 (defaults)")


def adadelta_208() -> OptimizerSpec:
    """Keras 2.0.8's ``Adadelta(lr=1.0, rho=0.95, epsilon=1e-8)`` (keras/optimizers.py@2.0.8:331)."""
    return OptimizerSpec("adadelta", 1.0, rho=0.95, epsilon=1e-8, source=f"{KERAS208}:331 (defaults)")


def adam_208() -> OptimizerSpec:
    """Keras 2.0.8's ``Adam(lr=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-8)`` (keras/optimizers.py@2.0.8:401)."""
    return OptimizerSpec("adam", 0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-8, source=f"{KERAS208}:401 (defaults)")


#: The axis permutation of an image input from Keras' layout to PyTorch's (``Workload.torch_layout``).
NHWC_TO_NCHW = (0, 3, 1, 2)


def flatten_images(ds: Dataset) -> Dataset:
    """``ds`` with each image input flattened to (N, H * W * C) (``Workload.prepare`` of the MLPs)."""
    flat = lambda xs: tuple(x.reshape(x.shape[0], -1) for x in xs)  # noqa: E731
    return Dataset(ds.name, flat(ds.x_train), ds.y_train, flat(ds.x_val), ds.y_val, ds.meta,
                   ds.source, ds.reason, ds.sha256)


def labels_2017(name: str, lines: str = "") -> Labels:
    """The one-hot labels, ``categorical_crossentropy`` and ``accuracy`` of the 2017 script ``name``, cited to
    ``lines`` of examples/<name>.py@2.0.8 (its to_categorical lines; its compile lines), or to the script alone when
    no lines are given."""
    where = f"examples/{name}.py@2.0.8" + (f":{lines}" if lines else "")
    return Labels("one_hot", "categorical_crossentropy", ("accuracy",), where)


def lstm_2017(keras, units: int, name: str | None = None):
    """A Keras LSTM of ``units`` as Keras 2.0.8 built it by default: ``recurrent_activation='hard_sigmoid'``, which was
    ``clip(0.2 * x + 0.5, 0, 1)`` (keras/layers/recurrent.py@2.0.8:971, keras/backend/tensorflow_backend.py@2.0.8:
    2837-2853). Today's Keras defaults to ``sigmoid`` (and Keras 3's ``hard_sigmoid`` has slope 1/6), and with
    ``sigmoid`` Keras runs the fused cuDNN kernel on a GPU (keras 3.15.1 layers/rnn/lstm.py; tf-keras 2.21 too),
    which the 2017 comparison's generic LSTM loop was not: this gate keeps every Keras stack on the generic loop,
    as the source timed it. The PyTorch twins use ``nn.LSTM`` (sigmoid gates, cuDNN on a GPU): PyTorch has no
    hard-sigmoid LSTM (a recorded difference, docs/suites/classic.md, "Method vs the sources")."""
    ops = keras.ops if hasattr(keras, "ops") else keras.backend  # Keras 3, or tf-keras (Keras 2)

    def hard_sigmoid_2017(x):
        return ops.clip(0.2 * x + 0.5, 0.0, 1.0)

    return keras.layers.LSTM(units, recurrent_activation=hard_sigmoid_2017, name=name)


def workload(name: str, published: Published, *, smoke_epochs: int, models: ModuleType | None = None,
             suite: str = "classic", **kw: Any) -> Workload:
    """The ``Workload`` ``name`` of ``suite`` with ``published``'s parameter count, batch and epochs (``full`` size;
    ``smoke_epochs`` at ``smoke``), each family's builder from its folder's ``models`` module (the function named as
    the family's ``builder``, ``build_keras``, ``build_torch``, ``build_flax``: ``bench.core.families.FAMILIES``; a
    family whose builder the module lacks is recorded unsupported on its stacks) and the rest of ``Workload``'s
    fields as ``kw`` (a builder given there wins). A classic one, a 2017 script, gets its script's one-hot labels
    (``labels_2017`` of the script alone, only when ``labels`` is not given) and its notebook's progress callback
    unless ``kw`` says otherwise."""
    if suite == "classic":
        if "labels" not in kw:  # not setdefault, which would build the default even when labels are given
            kw["labels"] = labels_2017(name)
        kw.setdefault("progress", "keras_tqdm")  # its notebook's fit(verbose=0, callbacks=[TQDMNotebookCallback])
    for family in FAMILIES.values():
        if models is not None and hasattr(models, family.builder):
            kw.setdefault(family.builder, getattr(models, family.builder))
    return Workload(name=name, suite=suite, params=published.params, batch_size=published.batch_size,
                    epochs={"smoke": smoke_epochs, "full": published.epochs}, published=published, **kw)

"""The classic suite: the Keras 2.0.8 ``examples/*.py`` scripts the 2017 backend comparison ran (Jasmeet Bhatia,
"Search for the fastest Deep Learning Framework supported by Keras", 2017:
https://www.kdnuggets.com/2017/09/search-fastest-keras-deep-learning-backend.html), and the tuning suite's MNIST CNN
of the 2025 tuning study (``mnist_cnn_tuning``), each defined once for Keras and once in plain PyTorch.

Each default is its source's, as the cited script ran it (keras-team/keras ``examples/<name>.py@2.0.8``) and as the
comparison's notebooks ran the scripts (github.com/jasmeetsb/deep-learning-keras-projects@fa5f333,
keras-performance-comparison/keras_perf_test_<name>.ipynb: the epochs, the fit call and its progress callback,
``Workload.progress``); ``notes`` lists what differs and why (also docs/suites/classic.md, "Method vs the sources").
Framework imports happen inside the builders, so the runner (which imports this registry) stays free of any
framework.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from bench.models.datasets import Dataset
from bench.models.workloads import Workload, register
from bench.models.workloads.flax_models import babi_flax, cifar_flax, cnn2017_flax, cnn_flax, hrnn_flax, mlp_flax
from bench.models.workloads.training import Augmentation, Labels, OptimizerSpec

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

NHWC_TO_NCHW = (0, 3, 1, 2)


def _flatten_images(ds: Dataset) -> Dataset:
    flat = lambda xs: tuple(x.reshape(x.shape[0], -1) for x in xs)  # noqa: E731
    return Dataset(ds.name, flat(ds.x_train), ds.y_train, flat(ds.x_val), ds.y_val, ds.meta,
                   ds.source, ds.reason, ds.sha256)


# ---- mnist_mlp: keras/examples/mnist_mlp.py (2017) -------------------------------------------------

def mlp_keras(keras, meta):
    """Keras MLP: (B, 784) float32 pixels -> 512 -> 512 (ReLU, dropout 0.2) -> softmax over ``num_classes``."""
    L = keras.layers
    return keras.Sequential([
        keras.Input((784,)),
        L.Dense(512, activation="relu"), L.Dropout(0.2),
        L.Dense(512, activation="relu"), L.Dropout(0.2),
        L.Dense(meta["num_classes"], activation="softmax"),
    ])


def mlp_torch(meta):
    """The same MLP in PyTorch: (B, 784) -> logits (B, ``num_classes``)."""
    from torch import nn

    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Dropout(0.2),
                         nn.Linear(512, 512), nn.ReLU(), nn.Dropout(0.2),
                         nn.Linear(512, meta["num_classes"]))


# ---- mnist_cnn: keras/examples/mnist_cnn.py (2017), 1,199,882 parameters ---------------------------

def cnn2017_keras(keras, meta):
    """Keras CNN of examples/mnist_cnn.py@2.0.8 (lines 47-57): (B, 28, 28, 1) -> Conv2D 32 -> Conv2D 64 -> 2x2
    max-pool -> dropout 0.25 -> 128 (dropout 0.5) -> softmax over ``num_classes``; 1,199,882 params."""
    L = keras.layers
    return keras.Sequential([
        keras.Input((28, 28, 1)),
        L.Conv2D(32, 3, activation="relu"), L.Conv2D(64, 3, activation="relu"),
        L.MaxPooling2D(2), L.Dropout(0.25),
        L.Flatten(), L.Dense(128, activation="relu"), L.Dropout(0.5),
        L.Dense(meta["num_classes"], activation="softmax"),
    ])


def cnn2017_torch(meta):
    """The same CNN in PyTorch: (B, 1, 28, 28) NCHW -> logits (B, ``num_classes``)."""
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
        nn.MaxPool2d(2), nn.Dropout(0.25),
        nn.Flatten(), nn.Linear(12 * 12 * 64, 128), nn.ReLU(), nn.Dropout(0.5),
        nn.Linear(128, meta["num_classes"]))


# ---- mnist_cnn_tuning: the tuning study's 4 Conv2D + 2 Dense CNN (563,018 parameters) --------------

def cnn_keras(keras, meta):
    """Keras CNN: (B, 28, 28, 1) -> 4 Conv2D (32, 32, 32, 64; one 2x2 max-pool) -> 128 -> softmax; 563,018 params."""
    L = keras.layers
    return keras.Sequential([
        keras.Input((28, 28, 1)),
        L.Conv2D(32, 3, activation="relu"), L.Conv2D(32, 3, activation="relu"), L.MaxPooling2D(2),
        L.Conv2D(32, 3, activation="relu"), L.Conv2D(64, 3, activation="relu"),
        L.Flatten(), L.Dense(128, activation="relu"),
        L.Dense(meta["num_classes"], activation="softmax"),
    ])


def cnn_torch(meta):
    """The same CNN in PyTorch: (B, 1, 28, 28) NCHW -> logits (B, ``num_classes``)."""
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
        nn.Flatten(), nn.Linear(8 * 8 * 64, 128), nn.ReLU(), nn.Linear(128, meta["num_classes"]))


# ---- mnist_hierarchical_rnn: keras/examples/mnist_hierarchical_rnn.py (2017) -----------------------

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


#: The name of the hierarchical RNN's row LSTM (``row_lstm_form`` finds it by it).
ROW_LSTM = "row_lstm"
#: Image rows, pixels per row, row LSTM units.
ROWS, COLS, ROW_UNITS = 28, 28, 128


def hrnn_keras(keras, meta, row_lstm: str = "time_distributed"):
    """Keras hierarchical RNN of examples/mnist_hierarchical_rnn.py@2.0.8:65-74: (B, 28, 28, 1) -> LSTM(128) over
    each row's 28 pixels -> LSTM(128) over the 28 rows -> softmax over ``num_classes``; 199,434 params.

    ``row_lstm`` (a ``bench.core.families.keras.KerasEpochSettings`` knob): ``time_distributed`` is the script's
    ``TimeDistributed(LSTM(128))`` (line 68), which each Keras runs its own way: Keras 2.0.8 reshaped the input to
    (B*28, 28, 1) and called the LSTM once (keras/layers/wrappers.py@2.0.8:190-208, the path of an ``Input`` without
    a batch size), and so does tf-keras for a built-in layer (tf_keras/src/layers/rnn/time_distributed.py@2.21.0:
    81-85, 168, 218-260), but Keras 3 calls it once per row, 28 times, when the time axis is static
    (keras/src/layers/rnn/time_distributed.py@v3.15.1:128-134): 28 x 28 + 28 = 812 sequential recurrent steps per
    forward pass instead of 56. ``reshape`` builds 2017's form explicitly on any Keras: reshape to (B*28, 28, 1), one
    call of the same row LSTM, reshape back to (B, 28, 128); the same weights (``row_lstm_form`` measures the form
    a model runs).

    Raises:
        ValueError: an unknown ``row_lstm``.
    """
    L = keras.layers
    x = keras.Input((ROWS, COLS, 1))
    row = lstm_2017(keras, ROW_UNITS, name=ROW_LSTM)  # each row: 28 pixels, one feature each
    if row_lstm == "time_distributed":
        rows = L.TimeDistributed(row)(x)
    elif row_lstm == "reshape":
        ops = keras.ops if hasattr(keras, "ops") else keras.backend  # Keras 3, or tf-keras (Keras 2)
        rows = ops.reshape(row(ops.reshape(x, (-1, COLS, 1))), (-1, ROWS, ROW_UNITS))
    else:
        raise ValueError(f"unknown row_lstm {row_lstm!r}; expected time_distributed or reshape")
    cols = lstm_2017(keras, 128)(rows)
    return keras.Model(x, L.Dense(meta["num_classes"], activation="softmax")(cols))


def row_lstm_form(keras, model, batch: int = 2) -> dict[str, Any]:
    """How ``model`` (an ``hrnn_keras`` model) applies its row LSTM, measured: the LSTM's ``call`` is counted, with
    the sequences each call gets, during one forward pass of ``batch`` zero images (after training: nothing is
    timed); a call inside a traced loop would count once, which no path of the Keras versions cited in
    ``hrnn_keras`` takes for this model. ``model`` is left as it was.

    Returns:
        ``row_lstm_calls_per_forward`` (28 or 1) and ``row_lstm_form``: ``reshape`` (one call on all B*28 rows, as
        Keras 2.0.8), ``per_row`` (28 calls of B rows each, Keras 3's ``TimeDistributed``), or ``other: ...``.
    """
    import numpy as np

    layer = next(getattr(x, "layer", x) for x in model.layers if getattr(x, "layer", x).name == ROW_LSTM)
    sequences: list[int] = []
    call = layer.call

    def counted(inputs, *args, **kwargs):
        sequences.append(int(inputs.shape[0]))
        return call(inputs, *args, **kwargs)

    object.__setattr__(layer, "call", counted)  # past the layers' attribute tracking; undone below
    try:
        model(np.zeros((batch, ROWS, COLS, 1), "float32"), training=False)
    finally:
        object.__delattr__(layer, "call")
    if sequences == [batch * ROWS]:
        form = "reshape"
    elif sequences == [batch] * ROWS:
        form = "per_row"
    else:
        form = f"other: {len(sequences)} calls of {sorted(set(sequences))} sequences (batch {batch})"
    return {"row_lstm_calls_per_forward": len(sequences), "row_lstm_form": form}


def hrnn_torch(meta):
    """The same hierarchical RNN in PyTorch: (B, 28, 28, 1) -> logits (B, ``num_classes``)."""
    from torch import nn

    class HierarchicalRNN(nn.Module):
        """Row LSTM, then column LSTM over the rows' last hidden states, then a linear head."""

        def __init__(self):
            super().__init__()
            self.row_lstm = nn.LSTM(1, 128, batch_first=True)
            self.col_lstm = nn.LSTM(128, 128, batch_first=True)
            self.head = nn.Linear(128, meta["num_classes"])

        def forward(self, x):  # x: (B, 28 rows, 28 pixels, 1)
            b, r, c, f = x.shape
            _, (h, _) = self.row_lstm(x.reshape(b * r, c, f))
            _, (h, _) = self.col_lstm(h[-1].reshape(b, r, -1))
            return self.head(h[-1])

    return HierarchicalRNN()


# ---- cifar10_cnn: keras/examples/cifar10_cnn.py (2017), with its real-time augmentation ------------

def cifar_keras(keras, meta):
    """Keras CIFAR-10 CNN: (B, 32, 32, 3) -> 2x(2 Conv2D + max-pool + dropout) -> 512 -> softmax; 1,250,858 params."""
    L = keras.layers
    return keras.Sequential([
        keras.Input((32, 32, 3)),
        L.Conv2D(32, 3, padding="same", activation="relu"), L.Conv2D(32, 3, activation="relu"),
        L.MaxPooling2D(2), L.Dropout(0.25),
        L.Conv2D(64, 3, padding="same", activation="relu"), L.Conv2D(64, 3, activation="relu"),
        L.MaxPooling2D(2), L.Dropout(0.25),
        L.Flatten(), L.Dense(512, activation="relu"), L.Dropout(0.5),
        L.Dense(meta["num_classes"], activation="softmax"),
    ])


def cifar_torch(meta):
    """The same CIFAR-10 CNN in PyTorch: (B, 3, 32, 32) NCHW -> logits (B, ``num_classes``)."""
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3), nn.ReLU(),
        nn.MaxPool2d(2), nn.Dropout(0.25),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(),
        nn.MaxPool2d(2), nn.Dropout(0.25),
        nn.Flatten(), nn.Linear(6 * 6 * 64, 512), nn.ReLU(), nn.Dropout(0.5),
        nn.Linear(512, meta["num_classes"]))


# ---- babi_rnn: keras/examples/babi_rnn.py (2017), LSTM, qa2 ------------------------------------------

EMBED = 50


def babi_keras(keras, meta):
    """Keras bAbI model: story (B, ``story_maxlen``) and question (B, ``query_maxlen``) int32 token ids -> embeddings
    (50), question LSTM repeated over the story, added, LSTM -> softmax over ``vocab_size``."""
    L = keras.layers
    story = keras.Input((meta["story_maxlen"],), dtype="int32")
    question = keras.Input((meta["query_maxlen"],), dtype="int32")
    s = L.Dropout(0.3)(L.Embedding(meta["vocab_size"], EMBED)(story))
    q = L.Dropout(0.3)(L.Embedding(meta["vocab_size"], EMBED)(question))
    q = L.RepeatVector(meta["story_maxlen"])(lstm_2017(keras, EMBED)(q))
    merged = L.Dropout(0.3)(lstm_2017(keras, EMBED)(L.add([s, q])))
    out = L.Dense(meta["vocab_size"], activation="softmax")(merged)
    return keras.Model([story, question], out)


def babi_torch(meta):
    """The same bAbI model in PyTorch: (story, question) int64 token ids -> logits (B, ``vocab_size``)."""
    from torch import nn

    class BabiRNN(nn.Module):
        """Story and question embeddings, the question's last LSTM state added to every story step, an LSTM, a head."""

        def __init__(self):
            super().__init__()
            self.story_emb = nn.Embedding(meta["vocab_size"], EMBED)
            self.query_emb = nn.Embedding(meta["vocab_size"], EMBED)
            self.query_lstm = nn.LSTM(EMBED, EMBED, batch_first=True)
            self.story_lstm = nn.LSTM(EMBED, EMBED, batch_first=True)
            self.drop = nn.Dropout(0.3)
            self.head = nn.Linear(EMBED, meta["vocab_size"])

        def forward(self, story, question):
            s = self.drop(self.story_emb(story))
            _, (q, _) = self.query_lstm(self.drop(self.query_emb(question)))
            merged = s + q[-1].unsqueeze(1)  # RepeatVector + add
            _, (h, _) = self.story_lstm(merged)
            return self.head(self.drop(h[-1]))

    return BabiRNN()


#: Where each 2017 script one-hot encodes its labels and compiles ``categorical_crossentropy`` with
#: ``metrics=['accuracy']`` (examples/<name>.py@2.0.8: the to_categorical lines; the compile lines).
ONE_HOT_LINES = {"mnist_mlp": "34-35; 46-48", "mnist_cnn": "44-45; 59-61", "mnist_hierarchical_rnn": "59-60; 76-78",
                 "cifar10_cnn": "37-38; 68-70",
                 "babi_rnn": "137-138 (vectorize_stories: np.zeros(len(word_idx) + 1), 1 at the answer); 213-214"}


def labels_2017(name: str) -> Labels:
    """The one-hot labels, ``categorical_crossentropy`` and ``accuracy`` of the 2017 script ``name``
    (``ONE_HOT_LINES``).

    Raises:
        LookupError: ``ONE_HOT_LINES`` has no entry for ``name``; the message says what to add.
    """
    if name not in ONE_HOT_LINES:
        raise LookupError(
            f"classic workload {name!r} has no entry in ONE_HOT_LINES (bench/models/workloads/classic.py): add "
            f"{name!r}: \"<to_categorical lines>; <compile lines>\" of examples/{name}.py@2.0.8, "
            "or give the workload its own labels=")
    return Labels("one_hot", "categorical_crossentropy", ("accuracy",),
                  f"examples/{name}.py@2.0.8:{ONE_HOT_LINES[name]}")


def _w(name: str, suite: str = "classic", **kw: Any) -> Workload:
    """Register the workload ``name`` (``Workload``'s fields as ``kw``); a classic one gets its script's one-hot
    labels (``labels_2017``, only when ``labels`` is not given) and its notebook's progress callback."""
    if suite == "classic":  # every classic workload is a 2017 script, and feeds its labels one-hot
        if "labels" not in kw:  # not setdefault: its argument would look up ONE_HOT_LINES even when labels are given
            kw["labels"] = labels_2017(name)
        kw.setdefault("progress", "keras_tqdm")  # its notebook's fit(verbose=0, callbacks=[TQDMNotebookCallback])
    return register(Workload(name=name, suite=suite, **kw))


#: examples/cifar10_cnn.py@2.0.8 lines 88-98: ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1,
#: horizontal_flip=True), the rest at the defaults (fill_mode 'nearest'), fed through fit_generator (line 104)
CIFAR10_AUGMENTATION = Augmentation(
    width_shift_range=0.1, height_shift_range=0.1, horizontal_flip=True,
    source="examples/cifar10_cnn.py@2.0.8:88-107; keras/preprocessing/image.py@2.0.8; "
           "keras/engine/training.py@2.0.8:1831-1843")

_w("mnist_mlp", dataset="mnist", batch_size=128, optimizer=rmsprop_208(), params=669_706,
   epochs={"smoke": 2, "full": 20}, samples={"smoke": 1024, "full": None},
   build_keras=mlp_keras, build_torch=mlp_torch, prepare=_flatten_images, build_flax=mlp_flax,
   source="keras/examples/mnist_mlp.py@2.0.8: 669,706 params, RMSprop() (lr 0.001, rho 0.9, epsilon 1e-8), "
          "batch 128, 20 epochs")
# Smoke: 16 steps of 8 per epoch. The model costs ~10 ms per image on a 2-core CPU, and Adadelta's first updates
# are small (about sqrt(epsilon / (1 - rho)) = 4.5e-4 per weight): 16 steps per epoch let the loss fall within
# 2 epochs on every stack (by 0.04 or more on synthetic data), where 2 steps of the published 128, or 8 of 8,
# did not on all of them.
_w("mnist_cnn", dataset="mnist", batch_size=128, optimizer=adadelta_208(), params=1_199_882,
   epochs={"smoke": 2, "full": 12}, samples={"smoke": 128, "full": None}, smoke_batch_size=8,
   build_keras=cnn2017_keras, build_torch=cnn2017_torch, torch_layout=(NHWC_TO_NCHW,), build_flax=cnn2017_flax,
   source="keras/examples/mnist_cnn.py@2.0.8: Conv2D 32, Conv2D 64, max-pool, dropout, Dense 128, 1,199,882 "
          "params, Adadelta() (lr 1.0, rho 0.95, epsilon 1e-8), batch 128, 12 epochs")
_w("mnist_hierarchical_rnn", dataset="mnist", batch_size=32, optimizer=rmsprop_208(), params=199_434,
   epochs={"smoke": 2, "full": 5}, samples={"smoke": 512, "full": None},
   build_keras=hrnn_keras, build_torch=hrnn_torch, build_flax=hrnn_flax, keras_knobs=("row_lstm",),
   keras_model_facts=row_lstm_form,
   source="keras/examples/mnist_hierarchical_rnn.py@2.0.8: LSTM 128 over rows then columns, 'rmsprop' "
          "(lr 0.001, rho 0.9, epsilon 1e-8), batch 32, 5 epochs",
   notes=("Keras 3 runs the script's TimeDistributed(LSTM) as 28 calls of the row LSTM (812 sequential recurrent "
          "steps per forward pass), where Keras 2.0.8 and tf.keras call it once on the reshaped rows (56): "
          "row_lstm=reshape is 2017's form on Keras 3; settings.row_lstm_form records the form that ran",))
_w("cifar10_cnn", dataset="cifar10", batch_size=32, params=1_250_858,
   optimizer=rmsprop_208(1e-4, decay=1e-6, source="examples/cifar10_cnn.py@2.0.8:65 rmsprop(lr=0.0001, decay=1e-6); "
                                                   f"{KERAS208}:212 (rho, epsilon)"),
   epochs={"smoke": 2, "full": 50}, samples={"smoke": 1024, "full": None},
   build_keras=cifar_keras, build_torch=cifar_torch, torch_layout=(NHWC_TO_NCHW,), build_flax=cifar_flax,
   augmentation=CIFAR10_AUGMENTATION,
   source="keras/examples/cifar10_cnn.py@2.0.8: 1,250,858 params, rmsprop(lr=0.0001, decay=1e-6), batch 32, "
          "real-time augmentation (shifts 0.1, horizontal flips) through fit_generator",
   notes=("50 epochs at full size, as the 2017 comparison's notebook ran the script (epochs = 50, "
          "keras_perf_test_cifar10_cnn.ipynb@fa5f333:56); the script itself runs 200 (--epochs 200)",))
_w("babi_rnn", dataset="babi", batch_size=32, optimizer=adam_208(), params=45_836,
   epochs={"smoke": 2, "full": 40}, samples={"smoke": 256, "full": None},
   build_keras=babi_keras, build_torch=babi_torch, validation_split=0.05,
   build_flax=partial(babi_flax, embed_size=EMBED),
   source="keras/examples/babi_rnn.py@2.0.8: LSTM, embed 50, 'adam' (lr 0.001, beta_1 0.9, beta_2 0.999, "
          "epsilon 1e-8), batch 32, 40 epochs, bAbI qa2 (1k), validation_split 0.05; 45,836 params with qa2's "
          "35-word vocabulary plus padding (vocab_size 36)")
# The tuning suite's model (bench/run/sweeps/tuning.yaml). Smoke: 4 steps of 8 per epoch. The sweep runs it in
# mixed_float16 / float16 autocast, whose convolutions some CPUs emulate at ~0.1 s per image (a 256 batch:
# 14-34 s per step).
_w("mnist_cnn_tuning", suite="tuning", dataset="mnist", batch_size=256, params=563_018,
   optimizer=OptimizerSpec("rmsprop", 1e-4, rho=0.9, epsilon=1e-7, torch_rho=0.99, torch_epsilon=1e-8,
                           eps_in_sqrt=True,
                           source="the tuning study's post: RMSprop lr=1e-4, each engine's optimizer from its own "
                                  "modules; rho and epsilon not printed: Keras 3's defaults on Keras "
                                  "(keras/src/optimizers/rmsprop.py@v3.9.2:56-58, the post's Keras), with its rule, "
                                  "epsilon inside the root (rmsprop.py@v3.9.2:151-153), torch's on PyTorch (alpha "
                                  "0.99, eps 1e-8: torch/optim/rmsprop.py@v2.13.0:31-36)"),
   epochs={"smoke": 2, "full": 41}, samples={"smoke": 32, "full": None}, smoke_batch_size=8,
   build_keras=cnn_keras, build_torch=cnn_torch, torch_layout=(NHWC_TO_NCHW,), build_flax=cnn_flax,
   source="MNIST CNN tuning study (4060 Ti, 2025): 4 Conv2D + 2 Dense, ~563k params, RMSprop 1e-4, "
          "batch 256, 41 epochs",
   notes=("the study publishes layer counts and ~563k parameters, not the layer list; this layout "
          "has 563,018",
          "the post prints neither RMSprop's rho and epsilon nor PyTorch's alpha and eps: each engine uses its "
          "framework's defaults (Keras rho 0.9, epsilon 1e-7; PyTorch alpha 0.99, eps 1e-8); the plain-JAX "
          "stack, beyond the study, uses Keras 3's values and rule (epsilon inside the root)"))

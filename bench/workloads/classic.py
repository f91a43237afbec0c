"""The classic suite: the Keras examples of the 2017 backend comparison and the MNIST CNN of the 2025
tuning study (``../shared/reference/``), each defined once for Keras and once in plain PyTorch.

Framework imports happen inside the builders, so the runner (which imports this registry) stays free
of any framework.
"""

from __future__ import annotations

from typing import Any

from bench.datasets import Dataset
from bench.workloads import Workload, register

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


# ---- mnist_cnn: the tuning study's 4 Conv2D + 2 Dense CNN (563,018 parameters) ---------------------

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

def hrnn_keras(keras, meta):
    """Keras hierarchical RNN: (B, 28, 28, 1) -> LSTM(128) over each row's pixels -> LSTM(128) over rows -> softmax."""
    L = keras.layers
    x = keras.Input((28, 28, 1))
    rows = L.TimeDistributed(L.LSTM(128))(x)  # each row: 28 pixels, one feature each
    cols = L.LSTM(128)(rows)
    return keras.Model(x, L.Dense(meta["num_classes"], activation="softmax")(cols))


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


# ---- cifar10_cnn: keras/examples/cifar10_cnn.py (2017), no augmentation ------------------------------

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
    q = L.RepeatVector(meta["story_maxlen"])(L.LSTM(EMBED)(q))
    merged = L.Dropout(0.3)(L.LSTM(EMBED)(L.add([s, q])))
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


def _w(name: str, **kw: Any) -> Workload:
    return register(Workload(name=name, suite="classic", **kw))


_w("mnist_mlp", dataset="mnist", batch_size=128, optimizer="rmsprop", learning_rate=1e-3,
   epochs={"smoke": 2, "full": 20}, samples={"smoke": 1024, "full": None},
   build_keras=mlp_keras, build_torch=mlp_torch, prepare=_flatten_images,
   source="keras/examples/mnist_mlp.py (Keras 2.0.8): 669,706 params, RMSprop, batch 128, 20 epochs")
# Smoke: 4 steps of 8 per epoch. The tuning sweep runs this model in mixed_float16 / float16 autocast,
# whose convolutions some CPUs emulate at ~0.1 s per image (a 256 batch: 14-34 s per step).
_w("mnist_cnn", dataset="mnist", batch_size=256, optimizer="rmsprop", learning_rate=1e-4,
   epochs={"smoke": 2, "full": 41}, samples={"smoke": 32, "full": None}, smoke_batch_size=8,
   build_keras=cnn_keras, build_torch=cnn_torch, torch_layout=(NHWC_TO_NCHW,),
   source="MNIST CNN tuning study (4060 Ti, 2025): 4 Conv2D + 2 Dense, ~563k params, RMSprop 1e-4, "
          "batch 256, 41 epochs",
   notes=("the study publishes layer counts and ~563k parameters, not the layer list; this layout "
          "has 563,018",))
_w("mnist_hierarchical_rnn", dataset="mnist", batch_size=32, optimizer="rmsprop", learning_rate=1e-3,
   epochs={"smoke": 2, "full": 5}, samples={"smoke": 512, "full": None},
   build_keras=hrnn_keras, build_torch=hrnn_torch,
   source="keras/examples/mnist_hierarchical_rnn.py (Keras 2.0.8): LSTM 128 over rows then columns, "
          "RMSprop, batch 32, 5 epochs")
_w("cifar10_cnn", dataset="cifar10", batch_size=32, optimizer="rmsprop", learning_rate=1e-4,
   epochs={"smoke": 2, "full": 50}, samples={"smoke": 1024, "full": None},
   build_keras=cifar_keras, build_torch=cifar_torch, torch_layout=(NHWC_TO_NCHW,),
   source="keras/examples/cifar10_cnn.py (Keras 2.0.8): 1,250,858 params, RMSprop lr 1e-4, batch 32",
   notes=("trained without the example's ImageDataGenerator augmentation and without its 1e-6 "
          "learning-rate decay (Keras 3 optimizers have no `decay`)",
          "50 epochs at full size: the source compared accuracy at epoch 50"))
_w("babi_rnn", dataset="babi", batch_size=32, optimizer="adam", learning_rate=1e-3,
   epochs={"smoke": 2, "full": 40}, samples={"smoke": 256, "full": None},
   build_keras=babi_keras, build_torch=babi_torch, validation_split=0.05,
   source="keras/examples/babi_rnn.py (Keras 2.0.8): LSTM, embed 50, Adam, batch 32, 40 epochs, "
          "bAbI qa2 (1k), validation_split 0.05")

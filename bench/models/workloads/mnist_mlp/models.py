"""The mnist_mlp model, keras/examples/mnist_mlp.py@2.0.8 (2017): an MLP of two 512-unit ReLU layers, three times:
``build_keras`` (Keras 2 or 3, any backend; softmax probabilities), ``build_torch`` (plain PyTorch; logits) and
``build_flax`` (Flax NNX for the plain-JAX stack; logits, ``bench.models.workloads.flax_common``). Frameworks are
imported inside the builders."""

from __future__ import annotations

from typing import Any

from bench.models.workloads.flax_common import keras208_layers


def build_keras(keras, meta):
    """Keras MLP: (B, 784) float32 pixels -> 512 -> 512 (ReLU, dropout 0.2) -> softmax over ``num_classes``."""
    L = keras.layers
    return keras.Sequential([
        keras.Input((784,)),
        L.Dense(512, activation="relu"), L.Dropout(0.2),
        L.Dense(512, activation="relu"), L.Dropout(0.2),
        L.Dense(meta["num_classes"], activation="softmax"),
    ])


def build_torch(meta):
    """The same MLP in PyTorch: (B, 784) -> logits (B, ``num_classes``)."""
    from torch import nn

    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Dropout(0.2),
                         nn.Linear(512, 512), nn.ReLU(), nn.Dropout(0.2),
                         nn.Linear(512, meta["num_classes"]))


def build_flax(meta: dict[str, Any], rngs) -> Any:
    """``build_keras`` in Flax NNX: (B, 784) float32 pixels -> 512 -> 512 (ReLU, dropout 0.2) -> logits
    (B, ``num_classes``); 669,706 params."""
    from flax import nnx

    dense, _ = keras208_layers(nnx, rngs)

    class MLP(nnx.Module):
        """Two ReLU layers of 512 with dropout 0.2, then a linear head."""

        def __init__(self):
            self.fc1, self.fc2, self.head = dense(784, 512), dense(512, 512), dense(512, meta["num_classes"])
            self.drop = nnx.Dropout(0.2, rngs=rngs)

        def __call__(self, x):
            x = self.drop(nnx.relu(self.fc1(x)))
            x = self.drop(nnx.relu(self.fc2(x)))
            return self.head(x)

    return MLP()

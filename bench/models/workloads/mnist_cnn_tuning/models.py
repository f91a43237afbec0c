"""The mnist_cnn_tuning model, the MNIST CNN tuning study's (2025) 4 Conv2D + 2 Dense CNN, 563,018 parameters, three
times: ``build_keras`` (Keras 2 or 3, any backend; softmax probabilities), ``build_torch`` (plain PyTorch; logits)
and ``build_flax`` (Flax NNX for the plain-JAX stack; logits, ``bench.models.workloads.flax_common``). Frameworks are
imported inside the builders."""

from __future__ import annotations

from typing import Any

from bench.models.workloads.flax_common import keras208_layers, max_pool2


def build_keras(keras, meta):
    """Keras CNN: (B, 28, 28, 1) -> 4 Conv2D (32, 32, 32, 64; one 2x2 max-pool) -> 128 -> softmax; 563,018 params."""
    L = keras.layers
    return keras.Sequential([
        keras.Input((28, 28, 1)),
        L.Conv2D(32, 3, activation="relu"), L.Conv2D(32, 3, activation="relu"), L.MaxPooling2D(2),
        L.Conv2D(32, 3, activation="relu"), L.Conv2D(64, 3, activation="relu"),
        L.Flatten(), L.Dense(128, activation="relu"),
        L.Dense(meta["num_classes"], activation="softmax"),
    ])


def build_torch(meta):
    """The same CNN in PyTorch: (B, 1, 28, 28) NCHW -> logits (B, ``num_classes``)."""
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
        nn.Flatten(), nn.Linear(8 * 8 * 64, 128), nn.ReLU(), nn.Linear(128, meta["num_classes"]))


def build_flax(meta: dict[str, Any], rngs) -> Any:
    """``build_keras`` (the tuning study's CNN) in Flax NNX: (B, 28, 28, 1) NHWC -> 4 Conv2D (32, 32, 32, 64; one
    2x2 max-pool) -> 128 -> logits (B, ``num_classes``); 563,018 params."""
    from flax import nnx

    dense, conv = keras208_layers(nnx, rngs)

    class CNN(nnx.Module):
        """Four 3x3 convolutions (a max-pool after the second), a dense layer of 128, a linear head."""

        def __init__(self):
            self.convs = nnx.List([conv(1, 32), conv(32, 32), conv(32, 32), conv(32, 64)])
            self.fc, self.head = dense(8 * 8 * 64, 128), dense(128, meta["num_classes"])

        def __call__(self, x):
            for i, layer in enumerate(self.convs):
                x = nnx.relu(layer(x))
                if i == 1:
                    x = max_pool2(nnx, x)
            x = x.reshape(x.shape[0], -1)
            return self.head(nnx.relu(self.fc(x)))

    return CNN()

"""The mnist_cnn model, keras/examples/mnist_cnn.py@2.0.8 (2017): two convolutions and a dense layer, 1,199,882
parameters, three times: ``build_keras`` (Keras 2 or 3, any backend; softmax probabilities), ``build_torch`` (plain
PyTorch; logits) and ``build_flax`` (Flax NNX for the plain-JAX stack; logits, ``bench.models.workloads.flax_common``).
Frameworks are imported inside the builders."""

from __future__ import annotations

from typing import Any

from bench.models.workloads.flax_common import keras208_layers, max_pool2


def build_keras(keras, meta):
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


def build_torch(meta):
    """The same CNN in PyTorch: (B, 1, 28, 28) NCHW -> logits (B, ``num_classes``)."""
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
        nn.MaxPool2d(2), nn.Dropout(0.25),
        nn.Flatten(), nn.Linear(12 * 12 * 64, 128), nn.ReLU(), nn.Dropout(0.5),
        nn.Linear(128, meta["num_classes"]))


def build_flax(meta: dict[str, Any], rngs) -> Any:
    """``build_keras`` (examples/mnist_cnn.py@2.0.8:47-57) in Flax NNX: (B, 28, 28, 1) NHWC -> Conv2D 32 ->
    Conv2D 64 -> 2x2 max-pool -> dropout 0.25 -> 128 (dropout 0.5) -> logits (B, ``num_classes``); 1,199,882
    params."""
    from flax import nnx

    dense, conv = keras208_layers(nnx, rngs)

    class CNN2017(nnx.Module):
        """Two 3x3 convolutions, a max-pool, a dense layer of 128, a linear head."""

        def __init__(self):
            self.conv1, self.conv2 = conv(1, 32), conv(32, 64)
            self.fc, self.head = dense(12 * 12 * 64, 128), dense(128, meta["num_classes"])
            self.drop1, self.drop2 = nnx.Dropout(0.25, rngs=rngs), nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            x = nnx.relu(self.conv2(nnx.relu(self.conv1(x))))
            x = self.drop1(max_pool2(nnx, x))
            x = x.reshape(x.shape[0], -1)  # NHWC flattened in Keras' order
            return self.head(self.drop2(nnx.relu(self.fc(x))))

    return CNN2017()

"""The cifar10_cnn model, keras/examples/cifar10_cnn.py@2.0.8 (2017): two convolution blocks and a 512-unit dense
layer, three times: ``build_keras`` (Keras 2 or 3, any backend; softmax probabilities), ``build_torch`` (plain
PyTorch; logits) and ``build_flax`` (Flax NNX for the plain-JAX stack; logits, ``bench.models.workloads.flax_common``).
Frameworks are imported inside the builders."""

from __future__ import annotations

from typing import Any

from bench.models.workloads.flax_common import conv, dense


def build_keras(keras, meta):
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


def build_torch(meta):
    """The same CIFAR-10 CNN in PyTorch: (B, 3, 32, 32) NCHW -> logits (B, ``num_classes``)."""
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3), nn.ReLU(),
        nn.MaxPool2d(2), nn.Dropout(0.25),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(),
        nn.MaxPool2d(2), nn.Dropout(0.25),
        nn.Flatten(), nn.Linear(6 * 6 * 64, 512), nn.ReLU(), nn.Dropout(0.5),
        nn.Linear(512, meta["num_classes"]))


def build_flax(meta: dict[str, Any], rngs: Any) -> Any:
    """Flax NNX CIFAR-10 CNN of examples/cifar10_cnn.py@2.0.8: (B, 32, 32, 3) NHWC float32 -> 2x(Conv2D 'same' +
    Conv2D 'valid' + 2x2 max-pool + dropout 0.25) -> Dense 512 (dropout 0.5) -> logits (B, ``num_classes``);
    1,250,858 params. The flatten is of NHWC, Keras' order (channels_last)."""
    from flax import nnx

    class CifarCNN(nnx.Module):
        """Two conv blocks (32, 64 filters), a 512-unit hidden layer, a linear head."""

        def __init__(self, rngs: nnx.Rngs):
            self.convs = nnx.List([conv(nnx, 3, 32, "same", rngs), conv(nnx, 32, 32, "valid", rngs),
                                   conv(nnx, 32, 64, "same", rngs), conv(nnx, 64, 64, "valid", rngs)])
            self.drops = nnx.List([nnx.Dropout(0.25, rngs=rngs), nnx.Dropout(0.25, rngs=rngs)])
            self.hidden = dense(nnx, 6 * 6 * 64, 512, rngs)
            self.drop_hidden = nnx.Dropout(0.5, rngs=rngs)
            self.head = dense(nnx, 512, meta["num_classes"], rngs)

        def __call__(self, x):  # x: (B, 32, 32, 3)
            for block in range(2):
                x = nnx.relu(self.convs[2 * block + 1](nnx.relu(self.convs[2 * block](x))))
                x = self.drops[block](nnx.max_pool(x, (2, 2), strides=(2, 2), padding="VALID"))
            x = self.drop_hidden(nnx.relu(self.hidden(x.reshape(x.shape[0], -1))))
            return self.head(x)

    return CifarCNN(rngs)

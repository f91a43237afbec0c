"""The classic models once more in Flax NNX, for the plain-JAX stack (``bench.run.engines.jax_engine``).

Each builder is ``(meta, rngs: flax.nnx.Rngs) -> nnx.Module`` whose ``__call__(*inputs)`` takes the Keras layout the
Dataset holds (NHWC images, flat pixels for the MLP) and returns logits (no softmax), like the PyTorch builders.
Same layers, shapes and parameter counts as the Keras definitions in ``bench.run.workloads.classic``; kernels start
as Keras' do (``glorot_uniform``, zero bias: keras/layers/core.py@2.0.8 ``Dense``, keras/layers/convolutional.py@2.0.8
``_Conv``), where Flax's own default is ``lecun_normal``. Dropout is ``nnx.Dropout``: on after ``model.train()``, off
after ``model.eval()``. Flax is imported inside each builder, so importing the registry imports no framework.
"""

from __future__ import annotations

from typing import Any


def _layers(nnx, rngs):
    """Dense and Conv2D factories with Keras 2.0.8's initialisers and padding ('valid')."""
    glorot = nnx.initializers.glorot_uniform()
    zeros = nnx.initializers.zeros_init()

    def dense(n_in: int, n_out: int):
        return nnx.Linear(n_in, n_out, kernel_init=glorot, bias_init=zeros, rngs=rngs)

    def conv(n_in: int, n_out: int):
        return nnx.Conv(n_in, n_out, kernel_size=(3, 3), padding="VALID", kernel_init=glorot, bias_init=zeros,
                        rngs=rngs)

    return dense, conv


def mlp_flax(meta: dict[str, Any], rngs) -> Any:
    """``mlp_keras`` in Flax NNX: (B, 784) float32 pixels -> 512 -> 512 (ReLU, dropout 0.2) -> logits
    (B, ``num_classes``); 669,706 params."""
    from flax import nnx

    dense, _ = _layers(nnx, rngs)

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


def _pool(nnx, x):
    """Keras' ``MaxPooling2D(2)``: 2x2 windows, stride 2, 'valid' (an odd edge row/column dropped)."""
    return nnx.max_pool(x, window_shape=(2, 2), strides=(2, 2), padding="VALID")


def cnn2017_flax(meta: dict[str, Any], rngs) -> Any:
    """``cnn2017_keras`` (examples/mnist_cnn.py@2.0.8:47-57) in Flax NNX: (B, 28, 28, 1) NHWC -> Conv2D 32 ->
    Conv2D 64 -> 2x2 max-pool -> dropout 0.25 -> 128 (dropout 0.5) -> logits (B, ``num_classes``); 1,199,882
    params."""
    from flax import nnx

    dense, conv = _layers(nnx, rngs)

    class CNN2017(nnx.Module):
        """Two 3x3 convolutions, a max-pool, a dense layer of 128, a linear head."""

        def __init__(self):
            self.conv1, self.conv2 = conv(1, 32), conv(32, 64)
            self.fc, self.head = dense(12 * 12 * 64, 128), dense(128, meta["num_classes"])
            self.drop1, self.drop2 = nnx.Dropout(0.25, rngs=rngs), nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            x = nnx.relu(self.conv2(nnx.relu(self.conv1(x))))
            x = self.drop1(_pool(nnx, x))
            x = x.reshape(x.shape[0], -1)  # NHWC flattened in Keras' order
            return self.head(self.drop2(nnx.relu(self.fc(x))))

    return CNN2017()


def cnn_flax(meta: dict[str, Any], rngs) -> Any:
    """``cnn_keras`` (the tuning study's CNN) in Flax NNX: (B, 28, 28, 1) NHWC -> 4 Conv2D (32, 32, 32, 64; one
    2x2 max-pool) -> 128 -> logits (B, ``num_classes``); 563,018 params."""
    from flax import nnx

    dense, conv = _layers(nnx, rngs)

    class CNN(nnx.Module):
        """Four 3x3 convolutions (a max-pool after the second), a dense layer of 128, a linear head."""

        def __init__(self):
            self.convs = nnx.List([conv(1, 32), conv(32, 32), conv(32, 32), conv(32, 64)])
            self.fc, self.head = dense(8 * 8 * 64, 128), dense(128, meta["num_classes"])

        def __call__(self, x):
            for i, layer in enumerate(self.convs):
                x = nnx.relu(layer(x))
                if i == 1:
                    x = _pool(nnx, x)
            x = x.reshape(x.shape[0], -1)
            return self.head(nnx.relu(self.fc(x)))

    return CNN()

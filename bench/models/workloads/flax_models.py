"""The classic models once more in Flax NNX, for the plain-JAX stack (``bench.models.engines.jax``).

Each builder is ``(meta, rngs: flax.nnx.Rngs) -> nnx.Module`` whose ``__call__(*inputs)`` takes the Keras layout the
Dataset holds (NHWC images, flat pixels for the MLP) and returns logits (no softmax), like the PyTorch builders.
Same layers, shapes and parameter counts as the Keras definitions in ``bench.models.workloads.classic``; kernels start
as Keras' do (``glorot_uniform``, zero bias: keras/layers/core.py@2.0.8 ``Dense``, keras/layers/convolutional.py@2.0.8
``_Conv``), where Flax's own default is ``lecun_normal``. Dropout is ``nnx.Dropout``: on after ``model.train()``, off
after ``model.eval()``. Flax is imported inside each builder, so importing the registry imports no framework.
Embeddings start as Keras 2.0.8's ``uniform`` = U(-0.05, 0.05) (keras/layers/embeddings.py@2.0.8:71,
keras/initializers.py@2.0.8:100), and the LSTMs as ``lstm_2017`` (see ``keras208_lstm``).
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

#: Keras 2.0.8's LSTM (keras/layers/recurrent.py@2.0.8): defaults at lines 969-976, weights at 1024-1049, step at
#: 1130-1175; its recurrent activation at keras/backend/tensorflow_backend.py@2.0.8:2837-2854.
KERAS208_LSTM = "keras/layers/recurrent.py@2.0.8:969-1175"


def hard_sigmoid_2017(x: Any) -> Any:
    """Keras 2.0.8's ``hard_sigmoid``: ``clip(0.2 * x + 0.5, 0, 1)`` (keras/backend/tensorflow_backend.py@2.0.8:
    2850-2853), elementwise on a JAX array of any shape."""
    import jax.numpy as jnp

    return jnp.clip(0.2 * x + 0.5, 0.0, 1.0)


def keras208_uniform(minval: float = -0.05, maxval: float = 0.05) -> Any:
    """Keras 2.0.8's ``RandomUniform(minval=-0.05, maxval=0.05)`` (keras/initializers.py@2.0.8:100), the Embedding
    default, as a JAX initializer ``(key, shape, dtype) -> array``."""
    import jax
    import jax.numpy as jnp

    def init(key: Any, shape: Any, dtype: Any = jnp.float32) -> Any:
        return jax.random.uniform(key, shape, dtype, minval, maxval)

    return init


def unit_forget_bias(units: int) -> Any:
    """Keras 2.0.8's LSTM bias with ``unit_forget_bias=True`` (the default): zeros, except ones for the forget gate,
    the second of the four gate blocks i, f, c, o (keras/layers/recurrent.py@2.0.8:1036-1042); a JAX initializer
    for the fused (4 * ``units``,) bias.

    Raises:
        ValueError: the requested shape is not (4 * ``units``,).
    """
    import jax.numpy as jnp

    def init(key: Any, shape: Any, dtype: Any = jnp.float32) -> Any:
        if tuple(shape) != (4 * units,):
            raise ValueError(f"an LSTM bias of {units} units has shape ({4 * units},), not {tuple(shape)}")
        return jnp.zeros(shape, dtype).at[units:2 * units].set(1.0)

    return init


def keras208_lstm(in_features: int, units: int, rngs: Any) -> Any:
    """An LSTM of ``units`` as Keras 2.0.8 built it by default (``lstm_2017``), as an ``nnx.RNN`` over an
    ``nnx.OptimizedLSTMCell`` (batch-major: (B, T, ``in_features``) in); run it with ``lstm_last_state``.

    Same weights as Keras: a fused input kernel (``in_features``, 4 * ``units``), glorot_uniform over that shape; a
    fused recurrent kernel (``units``, 4 * ``units``), orthogonal; one bias (4 * ``units``,) with the forget-gate
    block at one; gate blocks in Keras' order i, f, c, o; gates ``hard_sigmoid_2017``, cell and output ``tanh``. So
    4 * units * (in_features + units + 1) parameters, Keras' count. Source: ``KERAS208_LSTM``.
    """
    from flax import nnx

    cell = nnx.OptimizedLSTMCell(
        in_features, units, gate_fn=hard_sigmoid_2017, activation_fn=nnx.tanh,
        kernel_init=nnx.initializers.glorot_uniform(), recurrent_kernel_init=nnx.initializers.orthogonal(),
        bias_init=unit_forget_bias(units), rngs=rngs)
    # rngs=False: the carry starts at zeros (lstm_last_state), as Keras' initial states, so the RNN holds no RNG
    # stream that every call would advance.
    return nnx.RNN(cell, return_carry=True, rngs=False)


def lstm_last_state(rnn: Any, x: Any) -> Any:
    """The last hidden state h_T (B, units) of ``rnn`` (``keras208_lstm``) over ``x`` (B, T, features), from zero
    states, as a Keras LSTM with ``return_sequences=False`` returns it."""
    import jax.numpy as jnp

    zeros = jnp.zeros((*x.shape[:-2], rnn.cell.hidden_features), x.dtype)
    (_, h), _ = rnn(x, initial_carry=(zeros, zeros))
    return h


def _dense(nnx: Any, n_in: int, n_out: int, rngs: Any) -> Any:
    """Keras 2.0.8's Dense: glorot_uniform kernel, zero bias."""
    return nnx.Linear(n_in, n_out, kernel_init=nnx.initializers.glorot_uniform(), rngs=rngs)


def _conv(nnx: Any, n_in: int, n_out: int, padding: str, rngs: Any) -> Any:
    """Keras 2.0.8's Conv2D(n_out, 3, padding): NHWC, stride 1, glorot_uniform kernel (fans over 3x3 x channels,
    as Keras), zero bias."""
    return nnx.Conv(n_in, n_out, (3, 3), padding=padding.upper(), kernel_init=nnx.initializers.glorot_uniform(),
                    rngs=rngs)


# ---- mnist_hierarchical_rnn (hrnn_keras / hrnn_torch) ----------------------------------------------

def hrnn_flax(meta: dict[str, Any], rngs: Any) -> Any:
    """Flax NNX hierarchical RNN of examples/mnist_hierarchical_rnn.py@2.0.8: (B, 28, 28, 1) float32 pixels -> LSTM(128)
    over each row's 28 pixels -> LSTM(128) over the 28 rows' states -> logits (B, ``num_classes``); 199,434 params."""
    from flax import nnx

    class HierarchicalRNN(nnx.Module):
        """Row LSTM (TimeDistributed in Keras), column LSTM over the rows' last states, a linear head."""

        def __init__(self, rngs: nnx.Rngs):
            self.row_lstm = keras208_lstm(1, 128, rngs)
            self.col_lstm = keras208_lstm(128, 128, rngs)
            self.head = _dense(nnx, 128, meta["num_classes"], rngs)

        def __call__(self, x):  # x: (B, 28 rows, 28 pixels, 1)
            b, r, c, f = x.shape
            rows = lstm_last_state(self.row_lstm, x.reshape(b * r, c, f)).reshape(b, r, -1)
            return self.head(lstm_last_state(self.col_lstm, rows))

    return HierarchicalRNN(rngs)


# ---- cifar10_cnn (cifar_keras / cifar_torch) -------------------------------------------------------

def cifar_flax(meta: dict[str, Any], rngs: Any) -> Any:
    """Flax NNX CIFAR-10 CNN of examples/cifar10_cnn.py@2.0.8: (B, 32, 32, 3) NHWC float32 -> 2x(Conv2D 'same' +
    Conv2D 'valid' + 2x2 max-pool + dropout 0.25) -> Dense 512 (dropout 0.5) -> logits (B, ``num_classes``);
    1,250,858 params. The flatten is of NHWC, Keras' order (channels_last)."""
    from flax import nnx

    class CifarCNN(nnx.Module):
        """Two conv blocks (32, 64 filters), a 512-unit hidden layer, a linear head."""

        def __init__(self, rngs: nnx.Rngs):
            self.convs = nnx.List([_conv(nnx, 3, 32, "same", rngs), _conv(nnx, 32, 32, "valid", rngs),
                                   _conv(nnx, 32, 64, "same", rngs), _conv(nnx, 64, 64, "valid", rngs)])
            self.drops = nnx.List([nnx.Dropout(0.25, rngs=rngs), nnx.Dropout(0.25, rngs=rngs)])
            self.hidden = _dense(nnx, 6 * 6 * 64, 512, rngs)
            self.drop_hidden = nnx.Dropout(0.5, rngs=rngs)
            self.head = _dense(nnx, 512, meta["num_classes"], rngs)

        def __call__(self, x):  # x: (B, 32, 32, 3)
            for block in range(2):
                x = nnx.relu(self.convs[2 * block + 1](nnx.relu(self.convs[2 * block](x))))
                x = self.drops[block](nnx.max_pool(x, (2, 2), strides=(2, 2), padding="VALID"))
            x = self.drop_hidden(nnx.relu(self.hidden(x.reshape(x.shape[0], -1))))
            return self.head(x)

    return CifarCNN(rngs)


# ---- babi_rnn (babi_keras / babi_torch) ------------------------------------------------------------

def babi_flax(meta: dict[str, Any], rngs: Any, embed_size: int) -> Any:
    """Flax NNX bAbI model of examples/babi_rnn.py@2.0.8: story (B, ``story_maxlen``) and question
    (B, ``query_maxlen``) int token ids -> embeddings (``embed_size``: the script's 50, dropout 0.3), the
    question's LSTM(``embed_size``) state repeated over the story and added, LSTM(``embed_size``), dropout 0.3 ->
    logits (B, ``vocab_size``); 45,836 params with qa2's vocabulary. ``embed_size`` is ``classic.EMBED``, passed in
    by the registration so that imports go one way (classic -> this module)."""
    from flax import nnx

    vocab = meta["vocab_size"]

    def embed() -> Any:
        return nnx.Embed(vocab, embed_size, embedding_init=keras208_uniform(), rngs=rngs)

    class BabiRNN(nnx.Module):
        """Story and question embeddings, the question's last LSTM state added to every story step, an LSTM, a head."""

        def __init__(self, rngs: nnx.Rngs):
            self.story_emb, self.query_emb = embed(), embed()
            self.story_drop, self.query_drop, self.merged_drop = (nnx.Dropout(0.3, rngs=rngs) for _ in range(3))
            self.query_lstm = keras208_lstm(embed_size, embed_size, rngs)
            self.story_lstm = keras208_lstm(embed_size, embed_size, rngs)
            self.head = _dense(nnx, embed_size, vocab, rngs)

        def __call__(self, story, question):
            s = self.story_drop(self.story_emb(story))
            q = lstm_last_state(self.query_lstm, self.query_drop(self.query_emb(question)))
            merged = lstm_last_state(self.story_lstm, s + q[:, None, :])  # RepeatVector + add
            return self.head(self.merged_drop(merged))

    return BabiRNN(rngs)

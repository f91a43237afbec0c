"""What the Flax NNX twins of the epoch-trained workloads share, for the plain-JAX stack (``bench.models.engines.jax``):
Keras 2.0.8's layers, initialisers and LSTM in Flax NNX.

Each folder's Flax builder is ``(meta, rngs: flax.nnx.Rngs) -> nnx.Module`` whose ``__call__(*inputs)`` takes the
Keras layout the Dataset holds (NHWC images, flat pixels for the MLP) and returns logits (no softmax), like the
PyTorch builders, with the same layers, shapes and parameter counts as the folder's Keras builder. Kernels start as
Keras' do (``glorot_uniform``, zero bias: keras/layers/core.py@2.0.8 ``Dense``, keras/layers/convolutional.py@2.0.8
``_Conv``), where Flax's own default is ``lecun_normal``. Dropout is ``nnx.Dropout``: on after ``model.train()``,
off after ``model.eval()``. Flax is imported inside each function, so importing the registry imports no framework.
Embeddings start as Keras 2.0.8's ``uniform`` = U(-0.05, 0.05) (keras/layers/embeddings.py@2.0.8:71,
keras/initializers.py@2.0.8:100), and the LSTMs as ``lstm_2017`` (see ``keras208_lstm``).
"""

from __future__ import annotations

from typing import Any


def keras208_layers(nnx, rngs):
    """Dense and Conv2D factories with Keras 2.0.8's initialisers and padding ('valid')."""
    glorot = nnx.initializers.glorot_uniform()
    zeros = nnx.initializers.zeros_init()

    def dense(n_in: int, n_out: int):
        return nnx.Linear(n_in, n_out, kernel_init=glorot, bias_init=zeros, rngs=rngs)

    def conv(n_in: int, n_out: int):
        return nnx.Conv(n_in, n_out, kernel_size=(3, 3), padding="VALID", kernel_init=glorot, bias_init=zeros,
                        rngs=rngs)

    return dense, conv


def max_pool2(nnx, x):
    """Keras' ``MaxPooling2D(2)``: 2x2 windows, stride 2, 'valid' (an odd edge row/column dropped)."""
    return nnx.max_pool(x, window_shape=(2, 2), strides=(2, 2), padding="VALID")


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


def dense(nnx: Any, n_in: int, n_out: int, rngs: Any) -> Any:
    """Keras 2.0.8's Dense: glorot_uniform kernel, zero bias."""
    return nnx.Linear(n_in, n_out, kernel_init=nnx.initializers.glorot_uniform(), rngs=rngs)


def conv(nnx: Any, n_in: int, n_out: int, padding: str, rngs: Any) -> Any:
    """Keras 2.0.8's Conv2D(n_out, 3, padding): NHWC, stride 1, glorot_uniform kernel (fans over 3x3 x channels,
    as Keras), zero bias."""
    return nnx.Conv(n_in, n_out, (3, 3), padding=padding.upper(), kernel_init=nnx.initializers.glorot_uniform(),
                    rngs=rngs)



"""The mnist_hierarchical_rnn model, keras/examples/mnist_hierarchical_rnn.py@2.0.8 (2017): an LSTM over each row, then
one over the rows, three times: ``build_keras`` (Keras 2 or 3, any backend; softmax probabilities), ``build_torch``
(plain PyTorch; logits) and ``build_flax`` (Flax NNX for the plain-JAX stack; logits,
``bench.models.workloads.flax_common``). Frameworks are imported inside the builders."""

from __future__ import annotations

from typing import Any

from bench.models.workloads.common import lstm_2017
from bench.models.workloads.flax_common import dense, keras208_lstm, lstm_last_state

#: The name of the hierarchical RNN's row LSTM (``row_lstm_form`` finds it by it).
ROW_LSTM = "row_lstm"


#: Image rows, pixels per row, row LSTM units.
ROWS, COLS, ROW_UNITS = 28, 28, 128


def build_keras(keras, meta, row_lstm: str = "time_distributed"):
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
    """How ``model`` (an ``build_keras`` model) applies its row LSTM, measured: the LSTM's ``call`` is counted, with
    the sequences each call gets, during one forward pass of ``batch`` zero images (after training: nothing is
    timed); a call inside a traced loop would count once, which no path of the Keras versions cited in
    ``build_keras`` takes for this model. ``model`` is left as it was.

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


def build_torch(meta):
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


def build_flax(meta: dict[str, Any], rngs: Any) -> Any:
    """Flax NNX hierarchical RNN of examples/mnist_hierarchical_rnn.py@2.0.8: (B, 28, 28, 1) float32 pixels -> LSTM(128)
    over each row's 28 pixels -> LSTM(128) over the 28 rows' states -> logits (B, ``num_classes``); 199,434 params."""
    from flax import nnx

    class HierarchicalRNN(nnx.Module):
        """Row LSTM (TimeDistributed in Keras), column LSTM over the rows' last states, a linear head."""

        def __init__(self, rngs: nnx.Rngs):
            self.row_lstm = keras208_lstm(1, 128, rngs)
            self.col_lstm = keras208_lstm(128, 128, rngs)
            self.head = dense(nnx, 128, meta["num_classes"], rngs)

        def __call__(self, x):  # x: (B, 28 rows, 28 pixels, 1)
            b, r, c, f = x.shape
            rows = lstm_last_state(self.row_lstm, x.reshape(b * r, c, f)).reshape(b, r, -1)
            return self.head(lstm_last_state(self.col_lstm, rows))

    return HierarchicalRNN(rngs)

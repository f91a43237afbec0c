"""mnist_hierarchical_rnn's published facts and registration: keras/examples/mnist_hierarchical_rnn.py@2.0.8, as the
2017 comparison's notebook ran it (``bench.models.workloads.common``)."""

from __future__ import annotations

from bench.models.workloads.common import labels_2017, rmsprop_208, workload
from bench.models.workloads.mnist_hierarchical_rnn import models
from bench.models.workloads.published import Published, PublishedOptimizer

#: The workload it registers, by name: a literal, which the host reads without importing this module
#: (``bench.core.workloadnames``).
NAMES = ("mnist_hierarchical_rnn",)
#: Its place in the registry's order (``bench.models.workloads.discover``): ``bench list``, its suite's cells.
ORDER = 30

PUBLISHED = Published(
    params=199_434, batch_size=32, epochs=5, optimizer=PublishedOptimizer("rmsprop", 0.001, rho=0.9, epsilon=1e-8),
    where="model.summary() of examples/mnist_hierarchical_rnn.py@2.0.8; batch_size, epochs: "
          "mnist_hierarchical_rnn.py@2.0.8:36-38; 'rmsprop' (line 77), keras/optimizers.py@2.0.8:212's defaults")

WORKLOADS = (workload(
    NAMES[0], PUBLISHED, smoke_epochs=2, dataset="mnist", optimizer=rmsprop_208(),
    samples={"smoke": 512, "full": None}, labels=labels_2017("mnist_hierarchical_rnn", "59-60; 76-78"),
    models=models,
    keras_knobs=("row_lstm",), keras_model_facts=models.row_lstm_form,
    source="keras/examples/mnist_hierarchical_rnn.py@2.0.8: LSTM 128 over rows then columns, 'rmsprop' "
           "(lr 0.001, rho 0.9, epsilon 1e-8), batch 32, 5 epochs",
    notes=("Keras 3 runs the script's TimeDistributed(LSTM) as 28 calls of the row LSTM (812 sequential recurrent "
           "steps per forward pass), where Keras 2.0.8 and tf.keras call it once on the reshaped rows (56): "
           "row_lstm=reshape is 2017's form on Keras 3; settings.row_lstm_form records the form that ran",)),)

"""babi_rnn's published facts and registration: keras/examples/babi_rnn.py@2.0.8 on bAbI qa2, as the 2017
comparison's notebook ran it (``bench.models.workloads.common``)."""

from __future__ import annotations

from bench.models.workloads.babi_rnn import models
from bench.models.workloads.common import adam_208, labels_2017, workload
from bench.models.workloads.published import Published, PublishedOptimizer

#: The workload it registers, by name: a literal, which the host reads without importing this module
#: (``bench.core.workloadnames``).
NAMES = ("babi_rnn",)
#: Its place in the registry's order (``bench.models.workloads.discover``): ``bench list``, its suite's cells.
ORDER = 50

PUBLISHED = Published(
    params=45_836, batch_size=32, epochs=40,
    optimizer=PublishedOptimizer("adam", 0.001, epsilon=1e-8, beta_1=0.9, beta_2=0.999),
    where="model.summary() of examples/babi_rnn.py@2.0.8 with qa2's 35-word vocabulary plus padding (vocab_size 36); "
          "batch_size, epochs: babi_rnn.py@2.0.8:148-149; 'adam' (line 212), keras/optimizers.py@2.0.8:401's "
          "defaults")

WORKLOADS = (workload(
    NAMES[0], PUBLISHED, smoke_epochs=2, dataset="babi", optimizer=adam_208(),
    samples={"smoke": 256, "full": None},
    labels=labels_2017("babi_rnn", "137-138 (vectorize_stories: np.zeros(len(word_idx) + 1), 1 at the answer); "
                                   "213-214"),
    models=models, validation_split=0.05,
    source="keras/examples/babi_rnn.py@2.0.8: LSTM, embed 50, 'adam' (lr 0.001, beta_1 0.9, beta_2 0.999, "
           "epsilon 1e-8), batch 32, 40 epochs, bAbI qa2 (1k), validation_split 0.05; 45,836 params with qa2's "
           "35-word vocabulary plus padding (vocab_size 36)"),)

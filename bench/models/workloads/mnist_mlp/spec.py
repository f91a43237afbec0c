"""mnist_mlp's published facts and registration: keras/examples/mnist_mlp.py@2.0.8, as the 2017 comparison's
notebook ran it (``bench.models.workloads.common``)."""

from __future__ import annotations

from bench.models.workloads.common import flatten_images, labels_2017, rmsprop_208, workload
from bench.models.workloads.mnist_mlp import models
from bench.models.workloads.published import Published, PublishedOptimizer

#: The workload it registers, by name: a literal, which the host reads without importing this module
#: (``bench.core.workloadnames``).
NAMES = ("mnist_mlp",)
#: Its place in the registry's order (``bench.models.workloads.discover``): ``bench list``, its suite's cells.
ORDER = 10

PUBLISHED = Published(
    params=669_706, batch_size=128, epochs=20, optimizer=PublishedOptimizer("rmsprop", 0.001, rho=0.9, epsilon=1e-8),
    where="model.summary() of examples/mnist_mlp.py@2.0.8; batch_size, epochs: mnist_mlp.py@2.0.8:17-19; RMSprop() "
          "(line 47), keras/optimizers.py@2.0.8:212's defaults")

WORKLOADS = (workload(
    NAMES[0], PUBLISHED, smoke_epochs=2, dataset="mnist", optimizer=rmsprop_208(),
    samples={"smoke": 1024, "full": None}, labels=labels_2017("mnist_mlp", "34-35; 46-48"),
    models=models, prepare=flatten_images,
    source="keras/examples/mnist_mlp.py@2.0.8: 669,706 params, RMSprop() (lr 0.001, rho 0.9, epsilon 1e-8), "
           "batch 128, 20 epochs"),)

"""mnist_cnn's published facts and registration: keras/examples/mnist_cnn.py@2.0.8, as the 2017 comparison's
notebook ran it (``bench.models.workloads.common``)."""

from __future__ import annotations

from bench.models.workloads.common import NHWC_TO_NCHW, adadelta_208, labels_2017, workload
from bench.models.workloads.mnist_cnn import models
from bench.models.workloads.published import Published, PublishedOptimizer

#: The workload it registers, by name: a literal, which the host reads without importing this module
#: (``bench.core.workloadnames``).
NAMES = ("mnist_cnn",)
#: Its place in the registry's order (``bench.models.workloads.discover``): ``bench list``, its suite's cells.
ORDER = 20

PUBLISHED = Published(
    params=1_199_882, batch_size=128, epochs=12,
    optimizer=PublishedOptimizer("adadelta", 1.0, rho=0.95, epsilon=1e-8),
    where="model.summary() of examples/mnist_cnn.py@2.0.8; batch_size, epochs: mnist_cnn.py@2.0.8:16-18; Adadelta() "
          "(line 60), keras/optimizers.py@2.0.8:331's defaults")

# Smoke: 16 steps of 8 per epoch. The model costs ~10 ms per image on a 2-core CPU, and Adadelta's first updates
# are small (about sqrt(epsilon / (1 - rho)) = 4.5e-4 per weight): 16 steps per epoch let the loss fall within
# 2 epochs on every stack (by 0.04 or more on synthetic data), where 2 steps of the published 128, or 8 of 8,
# did not on all of them.
WORKLOADS = (workload(
    NAMES[0], PUBLISHED, smoke_epochs=2, dataset="mnist", optimizer=adadelta_208(),
    samples={"smoke": 128, "full": None}, smoke_batch_size=8, labels=labels_2017("mnist_cnn", "44-45; 59-61"),
    models=models, torch_layout=(NHWC_TO_NCHW,),
    source="keras/examples/mnist_cnn.py@2.0.8: Conv2D 32, Conv2D 64, max-pool, dropout, Dense 128, 1,199,882 "
           "params, Adadelta() (lr 1.0, rho 0.95, epsilon 1e-8), batch 128, 12 epochs"),)

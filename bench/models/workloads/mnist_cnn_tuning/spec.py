"""mnist_cnn_tuning's published facts and registration: the tuning suite's model, the MNIST CNN of the 2025 tuning
study (bench/run/sweeps/tuning.yaml runs its grid of knobs)."""

from __future__ import annotations

from bench.models.workloads.common import NHWC_TO_NCHW, workload
from bench.models.workloads.mnist_cnn_tuning import models
from bench.models.workloads.published import Published, PublishedOptimizer
from bench.models.workloads.training import OptimizerSpec

#: The workload it registers, by name: a literal, which the host reads without importing this module
#: (``bench.core.workloadnames``).
NAMES = ("mnist_cnn_tuning",)
#: Its place in the registry's order (``bench.models.workloads.discover``): ``bench list``, its suite's cells.
ORDER = 100

PUBLISHED = Published(
    params=563_018, batch_size=256, epochs=41,
    optimizer=PublishedOptimizer("rmsprop", 0.0001, rho=0.9, epsilon=1e-7),
    where="the study's ~563k parameters, our reconstruction of its layers having 563,018; batch and epochs: the "
          "post's header; RMSprop lr=1e-4 (the post), Keras 3's defaults (keras/src/optimizers/rmsprop.py@v3.9.2)")

# Smoke: 4 steps of 8 per epoch. The sweep runs it in mixed_float16 / float16 autocast, whose convolutions some CPUs
# emulate at ~0.1 s per image (a 256 batch: 14-34 s per step).
WORKLOADS = (workload(
    NAMES[0], PUBLISHED, smoke_epochs=2, suite="tuning", dataset="mnist",
    optimizer=OptimizerSpec("rmsprop", 1e-4, rho=0.9, epsilon=1e-7, torch_rho=0.99, torch_epsilon=1e-8,
                            eps_in_sqrt=True,
                            source="the tuning study's post: RMSprop lr=1e-4, each engine's optimizer from its own "
                                   "modules; rho and epsilon not printed: Keras 3's defaults on Keras "
                                   "(keras/src/optimizers/rmsprop.py@v3.9.2:56-58, the post's Keras), with its rule, "
                                   "epsilon inside the root (rmsprop.py@v3.9.2:151-153), torch's on PyTorch (alpha "
                                   "0.99, eps 1e-8: torch/optim/rmsprop.py@v2.13.0:31-36)"),
    samples={"smoke": 32, "full": None}, smoke_batch_size=8,
    models=models, torch_layout=(NHWC_TO_NCHW,),
    source="MNIST CNN tuning study (4060 Ti, 2025): 4 Conv2D + 2 Dense, ~563k params, RMSprop 1e-4, "
           "batch 256, 41 epochs",
    notes=("the study publishes layer counts and ~563k parameters, not the layer list; this layout "
           "has 563,018",
           "the post prints neither RMSprop's rho and epsilon nor PyTorch's alpha and eps: each engine uses its "
           "framework's defaults (Keras rho 0.9, epsilon 1e-7; PyTorch alpha 0.99, eps 1e-8); the plain-JAX "
           "stack, beyond the study, uses Keras 3's values and rule (epsilon inside the root)")),)

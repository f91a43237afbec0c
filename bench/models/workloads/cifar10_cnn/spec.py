"""cifar10_cnn's published facts and registration: keras/examples/cifar10_cnn.py@2.0.8 with its real-time
augmentation, as the 2017 comparison's notebook ran it (``bench.models.workloads.common``)."""

from __future__ import annotations

from bench.models.workloads.cifar10_cnn import models
from bench.models.workloads.common import KERAS208, NHWC_TO_NCHW, labels_2017, rmsprop_208, workload
from bench.models.workloads.published import Published, PublishedOptimizer
from bench.models.workloads.training import Augmentation

#: The workload it registers, by name: a literal, which the host reads without importing this module
#: (``bench.core.workloadnames``).
NAMES = ("cifar10_cnn",)
#: Its place in the registry's order (``bench.models.workloads.discover``): ``bench list``, its suite's cells.
ORDER = 40

PUBLISHED = Published(
    params=1_250_858, batch_size=32, epochs=50,
    optimizer=PublishedOptimizer("rmsprop", 0.0001, rho=0.9, epsilon=1e-8, decay=1e-6),
    where="model.summary() of examples/cifar10_cnn.py@2.0.8; batch_size: cifar10_cnn.py@2.0.8:22; epochs: 50, the "
          "2017 notebook's (keras_perf_test_cifar10_cnn.ipynb@fa5f333:56), the script's 200 named in the notes; "
          "rmsprop(lr=0.0001, decay=1e-6) (line 65), keras/optimizers.py@2.0.8:212's rho and epsilon")

#: examples/cifar10_cnn.py@2.0.8 lines 88-98: ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1,
#: horizontal_flip=True), the rest at the defaults (fill_mode 'nearest'), fed through fit_generator (line 104)
CIFAR10_AUGMENTATION = Augmentation(
    width_shift_range=0.1, height_shift_range=0.1, horizontal_flip=True,
    source="examples/cifar10_cnn.py@2.0.8:88-107; keras/preprocessing/image.py@2.0.8; "
           "keras/engine/training.py@2.0.8:1831-1843")

WORKLOADS = (workload(
    NAMES[0], PUBLISHED, smoke_epochs=2, dataset="cifar10",
    optimizer=rmsprop_208(1e-4, decay=1e-6, source="examples/cifar10_cnn.py@2.0.8:65 rmsprop(lr=0.0001, decay=1e-6); "
                                                    f"{KERAS208}:212 (rho, epsilon)"),
    samples={"smoke": 1024, "full": None}, labels=labels_2017("cifar10_cnn", "37-38; 68-70"),
    models=models, torch_layout=(NHWC_TO_NCHW,), augmentation=CIFAR10_AUGMENTATION,
    source="keras/examples/cifar10_cnn.py@2.0.8: 1,250,858 params, rmsprop(lr=0.0001, decay=1e-6), batch 32, "
           "real-time augmentation (shifts 0.1, horizontal flips) through fit_generator",
    notes=("50 epochs at full size, as the 2017 comparison's notebook ran the script (epochs = 50, "
           "keras_perf_test_cifar10_cnn.ipynb@fa5f333:56); the script itself runs 200 (--epochs 200)",)),)

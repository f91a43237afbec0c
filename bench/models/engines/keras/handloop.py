"""The Keras family's free-running loop (``bench.models.engines.HandLoop``): what ``bench.run.fidelity`` times the
harness against, the same model and data with no hooks at all, a device barrier and a clock read around the
compiling epoch and around the others as one block.
"""

from __future__ import annotations

from bench.core.stacks import Stack
from bench.instruments.timing import clock
from bench.models.datasets import Dataset
from bench.models.engines import NoisyMeasurement, math_mode
from bench.models.engines.frameworks import make_barrier
from bench.models.engines.keras.data import model_inputs
from bench.models.engines.keras.epochs import make_optimizer
from bench.models.engines.keras.runtime import import_keras
from bench.models.workloads import Workload


def run(*, stack: Stack, workload: Workload, ds: Dataset, device: str, epochs: int, batch: int,
        tf32: str) -> dict[str, float]:
    """The free-running Keras loop: the same compiled model, ``fit`` calls with no callbacks (``HandLoop``). Each
    call builds its input pipeline before its first step (no hook shows where), so it times a call of 1 epoch and
    one of ``epochs``: their difference is ``epochs - 1`` steady epochs, the per-call cost cancels
    (``fit_call_overhead_s`` records it).

    Raises:
        NoisyMeasurement: the ``epochs``-epoch ``fit`` took no longer than the 1-epoch one.
    """
    keras = import_keras(stack)
    math_mode.set_tf32(stack.backend, tf32)
    keras.utils.set_random_seed(0)
    model = workload.build_keras(keras, ds.meta)
    model.compile(optimizer=make_optimizer(keras, workload), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    barrier = make_barrier(stack.backend, device)
    x = model_inputs(ds.x_train)

    def timed_fit(n: int) -> float:
        barrier()
        t0 = clock()
        model.fit(x, ds.y_train, batch_size=batch, epochs=n, shuffle=True, verbose=0)
        barrier()
        return clock() - t0

    first = timed_fit(1)  # compiles
    # each fit call also builds its input pipeline before the first step (no hook shows where), so time a
    # call of 1 epoch and one of epochs-1+1: their difference is epochs-1 epochs, the per-call cost cancels
    one, many = timed_fit(1), timed_fit(epochs)
    steady = many - one
    if steady <= 0:
        raise NoisyMeasurement(f"fit({epochs} epochs) took {many:.3f} s, fit(1 epoch) {one:.3f} s: the machine's "
                               f"noise exceeds its {epochs - 1} steady epoch(s); measure more epochs, on a quiet "
                               "machine")
    return {"first_epoch_s": first, "steady_s": steady, "fit_call_overhead_s": one - steady / (epochs - 1)}

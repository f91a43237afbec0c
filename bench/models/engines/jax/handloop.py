"""The plain-JAX family's free-running loop (``bench.models.engines.HandLoop``): what ``bench.run.fidelity`` times the
harness against, the same model and data with no hooks at all, a device barrier and a clock read around the
compiling epoch and around the others as one block.
"""

from __future__ import annotations

from typing import Any

from bench.core.stacks import Stack
from bench.instruments.timing import time_free_running
from bench.models.datasets import Dataset
from bench.models.engines import math_mode
from bench.models.engines.jax import data
from bench.models.engines.jax.epochs import build_model, make_optimizer, make_steps
from bench.models.workloads import Workload


def run(*, stack: Stack, workload: Workload, ds: Dataset, device: str, epochs: int, batch: int,
        tf32: str) -> dict[str, float]:
    """The free-running plain-JAX loop: the engine's own jitted train step
    (``bench.models.engines.jax.epochs.make_steps``, float32) fed as a default cell feeds it (``numpy_batches``: NumPy
    batches of a fresh permutation, moved by the call), so the two differ only in what the harness adds; one barrier per
    epoch block, on the last step's outputs."""
    import jax
    import optax
    from flax import nnx

    math_mode.set_tf32("jax", tf32)
    dev = jax.devices("gpu" if device == "gpu" else "cpu")[0]
    with jax.default_device(dev):
        model = build_model(nnx, workload, ds.meta)
        tx, _ = make_optimizer(optax, workload)
        model.train()
        train_def, params, rest = nnx.split(model, nnx.Param, ...)  # type: ignore[misc]  # flax overloads: 3 parts
        model.eval()
        eval_def = nnx.graphdef(model)
        train, _ = make_steps(jax, nnx, optax, (train_def, eval_def), tx, "float32", jit=True)
        params, rest = jax.device_put((params, rest), dev)
        opt_state = jax.device_put(tx.init(params), dev)
        epoch_batches = data.numpy_epochs(ds.x_train, ds.y_train, batch)
    state = [params, opt_state, rest]
    totals: list[Any] = []

    def epoch():
        for xs, y in epoch_batches():
            new_params, new_opt_state, new_rest, step_totals = train(*state, xs, y)
            state[:], totals[:] = [new_params, new_opt_state, new_rest], [step_totals]

    def barrier():  # the step's every output: new parameters, optimizer state, model state, the batch's totals
        jax.block_until_ready((state, totals))

    return time_free_running(epoch, barrier, epochs)

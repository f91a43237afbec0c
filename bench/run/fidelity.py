"""Fidelity of the harness: its ms/step under each timing cadence against a free-running loop.

The free-running ("hand") run trains the same model on the same data with no hooks at all: one
epoch to compile, then a device barrier and a clock read around the remaining epochs as one block
(PyTorch: the bare loop, no loss read-back; Keras: ``fit`` calls with no callbacks, a call of 1 epoch
and one of ``epochs`` after the compiling one: their difference is ``epochs - 1`` steady epochs, without
the cost each call pays before its first step to build its input pipeline, which the harness's epoch
edges do not count either; ``handloop_fit_call_overhead_s`` records that cost). The
harness runs as cells run it (``bench.run.engines``, GPU telemetry sampler included) once per cadence
(``bench.run.timing.Cadence``: ``step``, ``every:N``, ``epoch``). Order: hand, each cadence, each cadence
again in reverse, hand (an ABBA design: a drift inside the process, like the few percent seen on
keras3-torch when the hand loop always ran first, results/fidelity/README.md, falls equally on both
sides of every comparison).

Per cadence: ``ms_per_step`` (steady epochs 2..N, mean of its two runs) and ``ratio`` = that over the
hand runs' mean ms/step; ``overhead_pct`` = 100 * (ratio - 1). A CPU cannot tell the cadences apart
where step cost dominates; the GPU run, with sub-millisecond steps, is the one that shows what a
per-step barrier costs.

Targets (issue "matrix"): |ratio - 1| <= 2 %, overhead <= 1 % on a GPU, where step cost dominates.
"""

from __future__ import annotations

import os
from typing import Any

from bench.core.knobs import KerasFitSettings, settings_class
from bench.core.stacks import get_stack
from bench.results.schema import to_json
from bench.run.cellenv import cell_env
from bench.run.engines import epoch_engine, frameworks, math_mode
from bench.run.engines.frameworks import make_barrier
from bench.run.telemetry import sampler
from bench.run.timing import Cadence, clock
from bench.run.workloads import Workload, get_workload

#: The free-running loops' math mode: the harness cell's default (each framework's shipped TF32 mode), so the
#: two sides of the comparison differ only in how they are timed.
TF32_AS_HARNESS = KerasFitSettings.tf32

class NoisyMeasurement(RuntimeError):
    """A free-running Keras run whose ``epochs``-epoch ``fit`` took no longer than its 1-epoch ``fit``: the
    machine's noise exceeded the ``epochs - 1`` epochs it measures, so there is no ms/step to report."""


def _hand_keras(stack, w, ds, device, epochs, batch) -> dict[str, float]:
    from bench.run.engines.keras.data import model_inputs
    from bench.run.engines.keras.fit import make_optimizer
    from bench.run.engines.keras.runtime import import_keras

    keras = import_keras(stack)
    math_mode.set_tf32(stack.backend, TF32_AS_HARNESS)
    keras.utils.set_random_seed(0)
    model = w.build_keras(keras, ds.meta)
    model.compile(optimizer=make_optimizer(keras, w), loss="sparse_categorical_crossentropy",
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


def _hand_torch(stack, w, ds, device, epochs, batch) -> dict[str, float]:
    import torch

    from bench.run.engines.torch.data import to_tensors
    from bench.run.engines.torch.fit import make_optimizer

    math_mode.set_tf32("torch", TF32_AS_HARNESS)
    torch.manual_seed(0)
    dev = torch.device("cuda" if device == "gpu" else "cpu")
    model = w.build_torch(ds.meta).to(dev)
    opt, loss_fn = make_optimizer(torch, model.parameters(), w), torch.nn.CrossEntropyLoss()
    xs, y = to_tensors(torch, ds.x_train, w.torch_layout, dev), torch.from_numpy(ds.y_train).long().to(dev)
    barrier, n = make_barrier("torch", device), ds.n_train

    def epoch():
        model.train()
        order = torch.randperm(n, device=dev)
        for i in range(0, n, batch):
            idx = order[i:i + batch]
            loss = loss_fn(model(*(x[idx] for x in xs)), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    barrier()
    t0 = clock()
    epoch()
    barrier()
    t1 = clock()
    for _ in range(epochs - 1):
        epoch()
    barrier()
    return {"first_epoch_s": t1 - t0, "steady_s": clock() - t1}


def _hand_jax(stack, w, ds, device, epochs, batch) -> dict[str, float]:
    """The free-running plain-JAX loop: the engine's own jitted train step (``bench.run.engines.jax.fit.make_steps``,
    float32) fed as a default cell feeds it (``numpy_batches``: NumPy batches of a fresh permutation, moved by the
    call), so the two differ only in what the harness adds; one barrier per epoch block, on the last step's outputs."""
    import jax
    import optax
    from flax import nnx

    from bench.run.engines.jax import data, fit

    math_mode.set_tf32("jax", TF32_AS_HARNESS)
    dev = jax.devices("gpu" if device == "gpu" else "cpu")[0]
    with jax.default_device(dev):
        model = fit.build_model(nnx, w, ds.meta)
        tx, _ = fit.make_optimizer(optax, w)
        model.train()
        train_def, params, rest = nnx.split(model, nnx.Param, ...)  # type: ignore[misc]  # flax overloads: 3 parts
        model.eval()
        eval_def = nnx.graphdef(model)
        train, _ = fit.make_steps(jax, nnx, optax, (train_def, eval_def), tx, "float32", jit=True)
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

    barrier()
    t0 = clock()
    epoch()
    barrier()
    t1 = clock()
    for _ in range(epochs - 1):
        epoch()
    barrier()
    return {"first_epoch_s": t1 - t0, "steady_s": clock() - t1}


#: The free-running loop of each engine (``measure`` compares the harness's cadences with it).
HAND_LOOPS = {"keras": _hand_keras, "torch": _hand_torch, "jax": _hand_jax}


CADENCES = ("step", "every:8", "epoch")


def measure(stack_id: str, workload: str, device: str, size: str, epochs: int = 4,
            cadences: tuple[str, ...] = CADENCES) -> dict[str, Any]:
    """Run hand, each cadence, each cadence in reverse, hand on ``workload``; returns ms/step and ratios.

    Returns:
        ``order`` (the runs as they ran), ``handloop_ms_per_step`` (steady epochs, mean of the two hand
        runs, ms), ``handloop_runs_ms`` (each), ``handloop_fit_call_overhead_s`` (Keras: each hand run's
        cost of one ``fit`` call before its first step, s; None for PyTorch), ``cadences``: per cadence
        ``ms_per_step`` (mean of its two runs), ``runs_ms`` (each), ``epoch_s`` (each run's epochs, s),
        ``barriers`` and ``clock_reads`` (per run), ``ratio`` (over the hand runs) and ``overhead_pct``
        (100 * (ratio - 1)).

    Raises:
        KeyError: unknown stack or workload. ValueError: fewer than 2 epochs or an invalid cadence.
        NoisyMeasurement: a Keras free-running run measured no time for its steady epochs.
    """
    if epochs < 2:
        raise ValueError("fidelity needs at least 2 epochs (the first one compiles)")
    for c in cadences:
        Cadence.parse(c)
    stack, w = get_stack(stack_id), get_workload(workload)
    if not isinstance(w, Workload):
        raise ValueError(f"{workload} is step-timed (paper suite): fidelity times the fit loop of a classic workload")
    env = cell_env(stack, device)  # as a default cell's process: before any framework import
    for removed in set(os.environ) - set(env):  # cell_env drops what a cell must not inherit (a TF32 override)
        del os.environ[removed]
    os.environ.update(env)
    if stack.backend != "tensorflow":
        frameworks.hide_gpus_from_tensorflow()
    ds = w.load_data(size, data="fallback")  # times the harness: synthetic data of the real shapes will do
    batch = w.batch_for(size)
    steps = -(-ds.n_train // batch)
    try:
        hand_fn = HAND_LOOPS[stack.engine]
    except KeyError:
        raise ValueError(f"fidelity has no free-running loop for the {stack.engine!r} engine ({stack_id})") from None
    settings_cls = settings_class(stack.engine)
    order = ["hand", *cadences, *reversed(cadences), "hand"]
    hand_ms: list[float] = []
    overhead_s: list[float] = []
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in cadences}
    for name in order:
        if name == "hand":
            h = hand_fn(stack, w, ds, device, epochs, batch)
            hand_ms.append(1000.0 * h["steady_s"] / ((epochs - 1) * steps))
            if "fit_call_overhead_s" in h:
                overhead_s.append(h["fit_call_overhead_s"])
            continue
        tel = sampler.for_device(device)  # the harness as cells run it, sampler included
        # augment=False: the free-running loop trains on the stored images, so the harness must too
        out = epoch_engine(stack.engine).fit(stack, w, ds, device, epochs, batch,
                                             settings_cls.from_dict({"sync": name, "augment": False}), telemetry=tel)
        runs[name].append(to_json(out.metrics))
    hand_mean = sum(hand_ms) / len(hand_ms)
    per_cadence = {}
    for c, ms in runs.items():
        each = [1000.0 * sum(m["epoch_s"][1:]) / ((epochs - 1) * steps) for m in ms]
        mean = sum(each) / len(each)
        per_cadence[c] = {"ms_per_step": mean, "runs_ms": each, "epoch_s": [m["epoch_s"] for m in ms],
                          "barriers": [m["barriers"] for m in ms], "clock_reads": [m["clock_reads"] for m in ms],
                          "ratio": mean / hand_mean, "overhead_pct": 100.0 * (mean / hand_mean - 1.0)}
    return {"stack": stack_id, "workload": workload, "device": device, "size": size, "epochs": epochs,
            "steps_per_epoch": steps, "batch_size": batch, "order": order, "handloop_ms_per_step": hand_mean,
            "handloop_runs_ms": hand_ms, "handloop_fit_call_overhead_s": overhead_s or None,
            "cadences": per_cadence, "data_source": ds.source}

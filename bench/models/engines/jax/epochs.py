"""A plain JAX training loop: the workload's Flax NNX model (``Workload.build_flax``), the optax optimizer of its
``OptimizerSpec``, a pure train step (parameters, optimizer state and the model's other state in, the same out)
compiled with ``jax.jit`` (``jit_compile=False``: run op by op), the loss read back once per epoch (every step
under ``sync=step``), as the PyTorch loop does.

The step is functional (``nnx.split`` once, ``nnx.merge`` inside the step), Flax's own advice for a loop whose
per-step Python overhead matters (flax docs, "Performance considerations" of ``nnx.jit``); the state is donated to
the step as Keras' JAX trainer donates it (keras/src/backend/jax/trainer.py@v3.15.1, ``donate_argnums=0``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Any

import numpy as np

from bench.core.families.jax import JaxEpochSettings
from bench.core.stacks import Stack
from bench.instruments import profile
from bench.instruments.profile import rerun
from bench.instruments.timing import Cadence
from bench.models.datasets import Dataset
from bench.models.engines import EpochResult, Unsupported, frameworks, math_mode, missing_model, tfdata
from bench.models.engines.epochloop import EpochSteps, LoopTiming, checked_augment, train_epochs
from bench.models.engines.jax.data import PLACEMENT, AugmentedBatches, device_epochs, numpy_epochs, tf_data_epochs
from bench.models.workloads import Workload
from bench.results.cell import Cell, EpochInputs
from bench.results.schema import EffectiveSettings, Memory, Model

#: Optax's Adam adds epsilon after the bias correction (optax/_src/transform.py@v0.2.8:300), Keras 2.0.8 before it
#: (keras/optimizers.py@2.0.8:424-434): an epsilon-sized difference, as PyTorch's Adam has.
ADAM_EPS_NOTE = ("optax.adam adds epsilon to sqrt(v_hat) after the bias correction (optax/_src/transform.py@v0.2.8:"
                 "300), Keras 2.0.8 to sqrt(v) before it (keras/optimizers.py@2.0.8:424-434): the same rule up to an "
                 "epsilon-sized difference, as in PyTorch")


#: The name scope of the optimizer's update in the train step: XLA keeps it in each op's ``op_name`` metadata, which
#: a profile reads to place the update (``bench.core.opcategories``: Keras' optimizers name theirs the same way);
#: metadata only, it changes no instruction of the compiled step.
OPTIMIZER_SCOPE = "optax"


def learning_rate(workload: Workload) -> float | Callable[[Any], Any]:
    """The learning rate of ``workload.optimizer``: a constant, or with Keras 2.0.8's ``decay`` the schedule
    ``lr / (1 + decay * t)`` (an InverseTimeDecay per update), t the updates done before this one
    (keras/optimizers.py@2.0.8:232); optax calls it with its update count, 0 for the first update
    (optax/_src/transform.py@v0.2.8, ``scale_by_learning_rate``)."""
    spec = workload.optimizer
    if not spec.decay:
        return spec.learning_rate
    lr, decay = spec.learning_rate, spec.decay
    return lambda count: lr / (1.0 + decay * count)


def make_optimizer(optax, workload: Workload):
    """The optax optimizer of ``workload.optimizer`` and the record of what it was built with (optax's names).

    Rules, checked against Keras 2.0.8 (keras/optimizers.py@2.0.8) and Keras 3: RMSprop takes the rule of the
    workload's source (``OptimizerSpec.eps_in_sqrt``): ``eps_in_sqrt=False`` divides by ``sqrt(v) + eps`` as Keras
    2.0.8 (line 239) and PyTorch do, ``True`` (optax's default) by ``sqrt(v + eps)`` as Keras 3 does
    (keras/src/optimizers/rmsprop.py@v3.15.1:143-145), both from a zero accumulator (``initial_scale=0``, Keras'
    zeros); Adadelta takes both roots of ``x + eps``
    (optax/_src/transform.py@v0.2.8:600), as Keras did (line 362), and accumulates the update before the learning
    rate scales it, as Keras did; Adam: ``ADAM_EPS_NOTE``.

    Returns:
        (``optax.GradientTransformation``, its ``settings.optimizer`` record).

    Raises:
        ValueError: an optimizer this engine does not know.
    """
    spec = workload.optimizer
    lr = learning_rate(workload)
    out: dict[str, Any] = {"learning_rate": float(spec.learning_rate)}
    if spec.name == "rmsprop":
        tx = optax.rmsprop(lr, decay=spec.rho, eps=spec.epsilon, initial_scale=0.0, eps_in_sqrt=spec.eps_in_sqrt)
        out.update(name="optax.rmsprop", decay=spec.rho, eps=spec.epsilon, eps_in_sqrt=spec.eps_in_sqrt,
                   initial_scale=0.0)
    elif spec.name == "adadelta":
        tx = optax.adadelta(lr, rho=spec.rho, eps=spec.epsilon)
        out.update(name="optax.adadelta", rho=spec.rho, eps=spec.epsilon)
    elif spec.name == "adam":
        tx = optax.adam(lr, b1=spec.beta_1, b2=spec.beta_2, eps=spec.epsilon)
        out.update(name="optax.adam", b1=spec.beta_1, b2=spec.beta_2, eps=spec.epsilon, note=ADAM_EPS_NOTE)
    else:
        raise ValueError(f"unknown optimizer {spec.name!r}")
    out["lr_schedule"] = ({"class": "callable", "rule": "lr / (1 + decay * t)", "decay": spec.decay}
                          if spec.decay else None)
    return tx, out


def make_steps(jax, nnx, optax, graphdef, tx, precision: str, jit: bool):
    """The pure train and eval steps of a model split as ``nnx.split(model, nnx.Param, ...)`` in train mode
    (``graphdef[0]``) and eval mode (``graphdef[1]``).

    ``train(params, opt_state, rest, xs, y) -> (params, opt_state, rest, totals)`` and ``evaluate(params, rest, xs,
    y) -> totals``; ``rest`` is the model's other state (dropout RNG counters), ``totals`` the float32 pair (summed
    loss, correct predictions) of the batch. ``precision='bfloat16'``: the parameters are cast to bfloat16 for the
    forward and backward pass and the float inputs too, gradients and updates stay float32: what Flax layers
    built with ``dtype=bfloat16, param_dtype=float32`` compute (flax/nnx/nn/linear.py@v0.12.8, ``promote_dtype``
    to ``dtype`` before the matmul or convolution); the logits go back to float32 for the loss.
    """
    import jax.numpy as jnp

    compute = jnp.bfloat16 if precision == "bfloat16" else jnp.float32
    train_def, eval_def = graphdef

    def cast(tree):
        return jax.tree.map(lambda a: a.astype(compute) if jnp.issubdtype(a.dtype, jnp.floating) else a, tree)

    def forward(gdef, params, rest, xs):
        model = nnx.merge(gdef, cast(params), rest, copy=True)  # Variables of this trace level, mutable here
        logits = model(*cast(xs)).astype(jnp.float32)
        return logits, nnx.state(model, nnx.Not(nnx.Param))

    def totals(logits, y, loss):
        return jnp.stack([loss * y.shape[0], (logits.argmax(-1) == y).sum().astype(jnp.float32)])

    def loss_fn(params, rest, xs, y):
        logits, rest = forward(train_def, params, rest, xs)
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        return loss, (logits, rest)

    def train(params, opt_state, rest, xs, y):
        (loss, (logits, rest)), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, rest, xs, y)
        with jax.named_scope(OPTIMIZER_SCOPE):  # names the update's ops for a profile; the program is the same
            updates, opt_state = tx.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
        return params, opt_state, rest, totals(logits, y, loss)

    def evaluate(params, rest, xs, y):
        logits, _ = forward(eval_def, params, rest, xs)
        return totals(logits, y, optax.softmax_cross_entropy_with_integer_labels(logits, y).mean())

    if not jit:
        return train, evaluate
    return jax.jit(train, donate_argnums=(0, 1, 2)), jax.jit(evaluate)


def build_model(nnx, workload: Workload, meta: dict[str, Any]):
    """The workload's Flax NNX model, parameters from seed 0 and dropout from seed 1.

    Raises:
        Unsupported: the workload has no Flax definition.
    """
    if workload.build_flax is None:
        raise Unsupported(missing_model("jax", workload) or "")
    return workload.build_flax(meta, nnx.Rngs(params=0, dropout=1))


def param_count(jax, params) -> int:
    """Elements in a parameter state (every ``nnx.Param``)."""
    return int(sum(np.size(a) for a in jax.tree.leaves(params)))


def _versions() -> dict[str, str]:
    return {f"{m}_version": metadata.version(m) for m in ("jax", "jaxlib", "flax", "optax")}


def fit(stack: Stack, workload: Workload, ds: Dataset, cell: Cell, settings: JaxEpochSettings,
        telemetry=None) -> EpochResult:
    """Train ``workload`` with a plain JAX loop on ``cell.device`` for its inputs' ``epochs`` of ``batch_size``
    (``EpochInputs``) and return the record blocks (as PyTorch's, ``bench.models.engines.torch.epochs.fit``).

    ``settings``: ``bench.core.families.jax.JaxEpochSettings``. The workload's augmentation, where its source had one
    and ``augment`` is not false, replaces the data pipeline (``AugmentedBatches``). The barrier blocks on the last
    step's outputs (new parameters, optimizer state and totals: everything the step computes); JAX dispatches
    asynchronously on every device. ``metrics.fit_call_s_per_epoch`` is the 2017 comparison's
    metric (``bench.instruments.timing.fit_metrics``): the whole training loop, every epoch and its validation, between
    barriers, over the epochs (``metrics.fit_call_s`` the loop itself); each epoch from its begin to after its
    validation is in ``metrics.fit_epoch_s``; the loop is ``bench.models.engines.epochloop.train_epochs``.

    Raises:
        Unsupported: the workload has no Flax definition; ``augment`` asked for where the source has none, or
            with another data pipeline.
        ValueError: an augmentation the pipeline cannot make (``Augmentation.check``).
    """
    import jax
    import optax
    from flax import nnx

    device, inputs = cell.device, cell.inputs_as(EpochInputs)
    epochs, batch_size = inputs.epochs, inputs.batch_size
    augmenting = checked_augment(settings, workload)
    effective = _effective_settings(settings, augmenting)  # the TF32 switches set before JAX picks its device
    dev = jax.devices("gpu" if device == "gpu" else "cpu")[0]
    effective["device"] = str(dev)
    state, total = _TrainState.build(jax, nnx, optax, workload, ds.meta, settings, dev, effective)
    batches, trained, loader = _train_data(jax, settings, augmenting, ds, workload, batch_size, epochs, dev, effective)
    xv, yv = jax.device_put((ds.x_val, ds.y_val), dev)
    steps = EpochSteps(batches, lambda: jax.device_put(np.zeros(2, np.float32), dev), state.step, _add,
                       lambda t: np.asarray(t).tolist(),
                       lambda: _evaluate(state.eval_step, state.params, state.rest, xv, yv, batch_size))
    timing = LoopTiming(state.barrier, lambda: jax.block_until_ready((*state.arrays(), xv, yv)),
                        Cadence.parse(settings.sync), telemetry, None if loader is None else loader.close)
    metrics, hist = train_epochs(steps, timing, epochs, batch_size, trained)
    return EpochResult(
        settings=_settings_block(effective),
        metrics=metrics,
        history=hist,
        # every nnx.Param is trained; a Flax LSTM cell has one bias (its hidden-to-hidden Linear's), as Keras'
        model=Model(params_total=total, params_effective=total, params_trainable=total),
        memory=Memory(device_peak_bytes=frameworks.device_peak_bytes("jax", device)),
        profile_run=_profile_run(state, batches, loader, workload, ds, batch_size),
    )


def _profile_run(state: _TrainState, batches: Callable[[], Iterator[Any]], loader: AugmentedBatches | None,
                 workload: Workload, ds: Dataset, batch_size: int) -> rerun.ProfileRun:
    """More steps of the trained state for ``bench run --profile``: on the fit's own batches, or where the fit's
    augmenting loader is spent and closed, on a fresh one made when the profile asks for its first batch."""
    aug = workload.augmentation
    if loader is None or aug is None:
        return rerun.loop(state.step, batches)
    fresh: list[AugmentedBatches] = []

    def again() -> Iterator[Any]:
        if not fresh:
            needed = rerun.WARMUP + profile.STEPS
            fresh.append(AugmentedBatches(aug, ds.x_train[0], ds.y_train, batch_size, -(-needed // loader.steps) + 1))
        return fresh[0].epoch()

    return rerun.loop(state.step, again, close=lambda: fresh[0].close() if fresh else None)


def _effective_settings(settings: JaxEpochSettings, augmenting: bool) -> dict[str, Any]:
    """The settings block as the knobs ask (and the TF32 switches, set here), before the device, model, optimizer
    and data add what took effect."""
    effective: dict[str, Any] = {**_versions(), "jit_compile": settings.jit_compile, "precision": settings.precision,
                                 "param_dtype": "float32", "compute_dtype": settings.precision,
                                 "data_pipeline": settings.data_pipeline, "augment": augmenting}
    effective.update(math_mode.set_tf32("jax", settings.tf32))
    return effective


def _settings_block(effective: dict[str, Any]) -> EffectiveSettings:
    return EffectiveSettings(**effective)


class _TrainState:
    """The functional training state between steps (parameters, optimizer state, the model's other state) and the
    jitted steps over it; ``step`` replaces it, ``barrier`` blocks on what the last step computed."""

    def __init__(self, jax, params, opt_state, rest, train_step, eval_step) -> None:
        self.jax, self.params, self.opt_state, self.rest = jax, params, opt_state, rest
        self.train_step, self.eval_step = train_step, eval_step
        self.last: list[Any] = [params]

    @classmethod
    def build(cls, jax, nnx, optax, workload: Workload, meta: dict[str, Any], settings: JaxEpochSettings, dev,
              effective: dict[str, Any]) -> tuple[_TrainState, int]:
        """The workload's model split into its state on ``dev``, the optimizer and the steps, and the parameter
        count; what they were built with goes into ``effective``."""
        model = build_model(nnx, workload, meta)
        model.train()
        train_def, params, rest = nnx.split(model, nnx.Param, ...)  # three parts: the graph, Params, the rest
        model.eval()
        eval_def = nnx.graphdef(model)
        total = param_count(jax, params)
        tx, effective["optimizer"] = make_optimizer(optax, workload)
        effective["loss"] = "optax.softmax_cross_entropy_with_integer_labels (logits, float32), batch mean"
        params, rest = jax.device_put((params, rest), dev)
        opt_state = jax.device_put(tx.init(params), dev)
        train_step, eval_step = make_steps(jax, nnx, optax, (train_def, eval_def), tx, settings.precision,
                                           settings.jit_compile)
        effective["donated_state"] = settings.jit_compile  # jax.jit's donate_argnums; op by op donates nothing
        return cls(jax, params, opt_state, rest, train_step, eval_step), total

    def step(self, batch) -> Any:
        xb, yb = batch
        self.params, self.opt_state, self.rest, step_totals = self.train_step(self.params, self.opt_state, self.rest,
                                                                               tuple(xb), yb)
        self.last[:] = [self.params, self.opt_state, step_totals]
        return step_totals

    def barrier(self) -> None:
        self.jax.block_until_ready(self.last)

    def arrays(self) -> tuple[Any, ...]:
        return self.params, self.opt_state, self.rest


def _train_data(jax, settings: JaxEpochSettings, augmenting: bool, ds: Dataset, workload: Workload, batch_size: int,
                epochs: int, dev,
                effective: dict[str, Any]) -> tuple[Callable[[], Iterator[Any]], int, AugmentedBatches | None]:
    """(``batches()``: one epoch's batches, the examples an epoch trains on, the augmenting loader to close or
    None): the workload's augmentation where ``augmenting``, else the ``data_pipeline``; recorded in ``effective``.

    Raises:
        ValueError: an augmentation the pipeline cannot make (``Augmentation.check``).
    """
    pipeline, n = settings.data_pipeline, ds.n_train
    trained, aug, loader = n, workload.augmentation, None
    if augmenting and aug is not None:  # augment_in_effect: only a workload with an augmentation augments
        aug.check(len(ds.x_train), n, batch_size)
        loader = AugmentedBatches(aug, ds.x_train[0], ds.y_train, batch_size, epochs)
        batches: Callable[[], Iterator[Any]] = loader.epoch
        trained = loader.steps * batch_size if aug.drop_remainder else n
        pipeline = "host_augmentation"
        effective.update(data_pipeline=pipeline, augmentation={
            **aug.record(), "where": PLACEMENT[pipeline], "shuffle_buffer": n,
            "implementation": "NumPy: edge pad, per-image crop at round(uniform(-r, r) * size), flip p=0.5"})
    elif pipeline == "numpy_batches":
        batches = numpy_epochs(ds.x_train, ds.y_train, batch_size)
    elif pipeline == "device_put_once":
        batches = device_epochs(jax, ds.x_train, ds.y_train, batch_size, dev, settings.jit_compile)
    else:
        batches = tf_data_epochs(ds.x_train, ds.y_train, batch_size)
    shuffled = tfdata.shuffle_buffer(n) if pipeline == "tf_data_numpy" else n  # else a whole-set permutation
    effective.update(train_data_placement=PLACEMENT[pipeline], shuffle_buffer=shuffled)
    return batches, trained, loader


def _add(sums, pair):
    return sums + pair


def _evaluate(eval_step, params, rest, xs, y, batch_size: int) -> tuple[float, float]:
    """(mean loss, accuracy) over the validation set in batches of ``batch_size``, the model in eval mode."""
    n = int(y.shape[0])
    sums = np.zeros(2)
    for i in range(0, n, batch_size):
        sums += np.asarray(eval_step(params, rest, tuple(x[i:i + batch_size] for x in xs), y[i:i + batch_size]))
    return float(sums[0] / n), float(sums[1] / n)


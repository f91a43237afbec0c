"""A plain, idiomatic PyTorch training loop: tensors preloaded on the device (the validation set always, the
training set by default), a shuffled index per epoch, the workload's optimizer with its source's hyper-parameters.
The loss and accuracy are summed on the device and read back once per epoch at the default ``sync=epoch`` (every
step only under ``sync=step``), where Keras' ``fit``, given the 2017 notebooks' per-batch callback (or its
progress bar), fetches its logs after every step: the classic table's row on the twins' loop. The data pipelines
are ``bench.models.engines.torch.data``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from bench.core.families.torch import TorchEpochSettings
from bench.core.stacks import Stack
from bench.instruments.profile import rerun
from bench.instruments.timing import Cadence
from bench.models.datasets import Dataset
from bench.models.engines import EpochResult, frameworks, math_mode, toolchain
from bench.models.engines.epochloop import EpochSteps, LoopTiming, checked_augment, train_epochs
from bench.models.engines.frameworks import make_barrier
from bench.models.engines.torch.data import (
    AUGMENTED_PLACEMENT,
    MNIST_NORMALIZE,
    augmented_loader,
    loader_kwargs,
    make_batches,
    on_device,
    placement,
    to_tensors,
)
from bench.models.engines.torch.settle import records_graphs, settler
from bench.models.workloads import Workload
from bench.results.cell import Cell, EpochInputs
from bench.results.schema import EffectiveSettings, Memory, Model


def make_optimizer(torch, params, workload: Workload):
    """The PyTorch optimizer of ``workload.optimizer.for_engine("torch")``, every hyper-parameter explicit (Keras'
    names mapped: RMSprop's ``rho`` is torch's ``alpha``, ``epsilon`` is ``eps``): the Keras values, except where
    the source's PyTorch code took torch's own defaults (``OptimizerSpec.torch_rho`` / ``torch_epsilon``:
    ``mnist_cnn_tuning``).

    Rules: torch's RMSprop adds eps to the root (torch/optim/rmsprop.py@v2.13.0, ``square_avg.sqrt().add_(eps)``)
    and its Adadelta takes both roots of ``x + eps`` (torch/optim/adadelta.py@v2.13.0:293-302), as Keras 2.0.8
    did (keras/optimizers.py@2.0.8:239, 362); its Adam adds eps after the bias correction
    (torch/optim/adam.py@v2.13.0:544), Keras (2.0.8 and 3) before it (keras/optimizers.py@2.0.8:424-434): an
    eps-sized difference, documented. The learning-rate ``decay`` is ``make_scheduler``'s.

    Raises:
        ValueError: an optimizer this engine does not know.
    """
    spec = workload.optimizer.for_engine("torch")
    if spec.name == "rmsprop":
        return torch.optim.RMSprop(params, lr=spec.learning_rate, alpha=spec.rho, eps=spec.epsilon)
    if spec.name == "adadelta":
        return torch.optim.Adadelta(params, lr=spec.learning_rate, rho=spec.rho, eps=spec.epsilon)
    if spec.name == "adam":
        return torch.optim.Adam(params, lr=spec.learning_rate, betas=(spec.beta_1, spec.beta_2), eps=spec.epsilon)
    raise ValueError(f"unknown optimizer {spec.name!r}")


def make_scheduler(torch, optimizer, workload: Workload):
    """Keras 2.0.8's per-update decay ``lr / (1 + decay * t)``, t the updates done before this one
    (keras/optimizers.py@2.0.8:232), as ``torch.optim.lr_scheduler.LambdaLR`` stepped after every optimizer step
    (its factor for the first step is lambda(0) = 1). None without a decay."""
    decay = workload.optimizer.decay
    if not decay:
        return None
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: 1.0 / (1.0 + decay * t))


def optimizer_record(optimizer, workload: Workload) -> dict[str, Any]:
    """What the PyTorch optimizer was built with, read back from it (``settings.optimizer``, torch's names)."""
    d = optimizer.defaults
    out: dict[str, Any] = {"name": type(optimizer).__name__, "learning_rate": float(d["lr"])}
    for key in ("alpha", "rho", "eps", "betas", "momentum", "centered", "weight_decay", "amsgrad"):
        if key in d:
            v = d[key]
            out[key] = list(map(float, v)) if isinstance(v, tuple) else v if isinstance(v, bool) else float(v)
    decay = workload.optimizer.decay
    out["lr_schedule"] = {"class": "LambdaLR", "rule": "lr / (1 + decay * t)", "decay": decay} if decay else None
    return out


def effective_param_count(model) -> int:
    """Parameters, counting an LSTM's two bias vectors (b_ih + b_hh) as the one bias they act as.

    Keras' LSTM has a single bias; PyTorch's adds a second, redundant one. Everything else counts.
    """
    return int(sum(p.numel() for n, p in model.named_parameters() if "bias_hh" not in n))


def autocast_dtype(torch, precision: str):
    """The ``torch.autocast`` dtype of the ``precision`` knob (``float16_autocast``: ``torch.float16``,
    ``bfloat16_autocast``: ``torch.bfloat16``), None for ``float32`` (no autocast)."""
    return {"float16_autocast": torch.float16, "bfloat16_autocast": torch.bfloat16}.get(precision)


def _evaluate(torch, model, loss_fn, xs, y, batch_size: int, amp_dtype=None) -> tuple[float, float]:
    """(mean loss, accuracy) of ``model`` on ``xs``, ``y`` in batches of ``batch_size``, under the training step's
    autocast (``amp_dtype``, None: none), as its counterparts validate: Keras' ``mixed_float16`` is a layer policy,
    which casts a layer's inputs to its compute dtype and opens its autocast scope in every call, evaluation's too
    (keras/src/layers/layer.py@v3.15.1:873-898, 985-997), and the Flax twin casts its eval step as its train step
    (``bench.models.engines.jax.epochs.make_steps``).

    ``fit`` passes the module its training step calls, the ``torch.compile``'d one under ``compile``: Keras compiles
    its test function with the train function (``jit_compile``: keras/src/backend/torch/trainer.py@v3.15.1:148-149,
    keras/src/backend/tensorflow/trainer.py@v3.15.1:259-262 through ``_make_function``), as the Flax twin jits its
    eval step. The eval-mode graph compiles at the first validation: after the first epoch's timed steps, inside its
    span (``metrics.fit_epoch_s[0]``, ``fit_call_s``), never in a timed step or ``total_train_s``; what CUDA graph
    trees do at its second call is ``bench.models.engines.torch.settle.settler``'s."""
    total, correct, n = 0.0, 0, int(y.shape[0])
    for out, yb in _validation_outputs(torch, model, xs, y, batch_size, amp_dtype):
        total += float(loss_fn(out, yb)) * yb.shape[0]
        correct += int((out.argmax(1) == yb).sum())
    return total / n, correct / n


def _validation_outputs(torch, model, xs, y, batch_size: int, amp_dtype, one_per_size: bool = False):
    """Yield (``model``'s output, labels) for each validation batch of ``batch_size`` rows (the last one shorter
    where ``batch_size`` does not divide them), in evaluation mode, without gradients, under the step's autocast;
    ``one_per_size``: only the first batch of each size (what ``settler`` rehearses)."""
    model.eval()
    n = int(y.shape[0])
    starts: Iterable[int] = range(0, n, batch_size)
    if one_per_size:
        first_of: dict[int, int] = {}
        for i in starts:
            first_of.setdefault(min(batch_size, n - i), i)
        starts = first_of.values()
    with torch.no_grad(), torch.autocast(y.device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
        for i in starts:
            yield model(*(x[i:i + batch_size] for x in xs)), y[i:i + batch_size]


def _effective_settings(torch, settings: TorchEpochSettings) -> EffectiveSettings:
    """The settings block as the knobs ask, before the model, optimizer and data add what took effect."""
    pipeline = settings.data_pipeline
    return EffectiveSettings(torch_version=torch.__version__, precision=settings.precision, compile=settings.compile,
                             data_pipeline=pipeline, num_workers=settings.num_workers,
                             # tensors_on_device holds the data on the device whatever preload says
                             preload=settings.preload or pipeline == "tensors_on_device",
                             **math_mode.set_tf32("torch", settings.tf32))


def _trainer(torch, model, workload: Workload, settings: TorchEpochSettings, dev,
             effective: EffectiveSettings) -> tuple[Callable[[Any], Any], Callable[[Any], Any], Any, Any]:
    """(``step(batch)`` -> the batch's device pair (summed loss, correct), ``loss(batch)``: the step's forward alone,
    the loss function, the module the step calls: ``model`` under ``torch.compile`` as ``compile`` asks, else
    ``model``): one training step of ``model``
    with the workload's optimizer and schedule, under ``compile``, autocast and the grad scaler as ``settings`` ask;
    what it built goes into ``effective``."""
    mode, precision = settings.compile, settings.precision
    opt = make_optimizer(torch, model.parameters(), workload)
    scheduler = make_scheduler(torch, opt, workload)
    effective.optimizer = optimizer_record(opt, workload)
    loss_fn = torch.nn.CrossEntropyLoss()
    effective.loss = "CrossEntropyLoss (logits)"
    step_model = model if mode == "none" else torch.compile(model) if mode == "default" else \
        torch.compile(model, mode=mode)
    amp_dtype = autocast_dtype(torch, precision)
    scaler = torch.amp.GradScaler(dev.type) if settings.grad_scaler else None
    effective.grad_scaler = scaler is not None

    def forward(batch):
        xb, yb = batch
        with torch.autocast(dev.type, dtype=amp_dtype, enabled=amp_dtype is not None):
            out = step_model(*xb)
            return out, loss_fn(out, yb)

    def step(batch):
        out, loss = forward(batch)
        yb = batch[1]
        opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        if scheduler is not None:
            scheduler.step()
        return torch.stack([loss.detach().float() * yb.numel(), (out.argmax(1) == yb).sum().float()])

    return step, lambda batch: forward(batch)[1], loss_fn, step_model


def _train_data(torch, settings: TorchEpochSettings, ds: Dataset, workload: Workload, batch_size: int, dev,
                augmenting: bool, effective: EffectiveSettings) -> tuple[Callable[[], Iterable[Any]], int]:
    """(``batches()``: one epoch's batches on the device, the examples an epoch trains on): the workload's
    augmentation where ``augmenting``, else the ``data_pipeline``; its options as they took effect go into
    ``effective``."""
    pipeline = settings.data_pipeline
    n = trained = ds.n_train
    effective.augment = augmenting
    aug = workload.augmentation
    if augmenting and aug is not None:  # augment_in_effect: only a workload with an augmentation augments
        loader, effective.augmentation = augmented_loader(torch, aug, ds, workload, batch_size, dev)
        batches = on_device(loader, dev)
        effective.data_pipeline, effective.train_data_placement = "host_augmentation", AUGMENTED_PLACEMENT
        effective.num_workers, effective.preload, effective.shuffle_buffer = aug.workers, False, n
        effective.pin_memory, effective.persistent_workers = loader.pin_memory, loader.persistent_workers
        trained = n // batch_size * batch_size if aug.drop_remainder else n
    else:
        batches = make_batches(torch, pipeline, settings, ds, workload, batch_size, dev)
        effective.shuffle_buffer = n  # a full permutation each epoch (randperm, DataLoader(shuffle=True))
        effective.train_data_placement = placement(pipeline, settings.preload)
        if pipeline != "tensors_on_device":  # the DataLoader's options as they took effect (loader_kwargs)
            kw = loader_kwargs(torch, batch_size, settings.num_workers, dev, settings.pin_memory,
                               settings.persistent_workers)
            effective.pin_memory, effective.persistent_workers = kw["pin_memory"], kw["persistent_workers"]
    return batches, trained


def _validation_data(torch, pipeline: str, augmenting: bool, ds: Dataset, workload: Workload, dev,
                     effective: EffectiveSettings) -> tuple[tuple[Any, ...], Any]:
    """(inputs, labels) of the validation set on the device, normalised as the torchvision pipeline trains."""
    xv = to_tensors(torch, ds.x_val, workload.torch_layout, dev)
    if pipeline == "torchvision_dataset_transforms" and not augmenting:
        # validate on what the model trains on: the transform's normalised pixels
        (mean,), (std,) = MNIST_NORMALIZE
        xv = tuple((x - mean) / std for x in xv)
        effective.normalize = {"mean": list(MNIST_NORMALIZE[0]), "std": list(MNIST_NORMALIZE[1]),
                               "source": "assumed: MNIST's, as pytorch/examples mnist/main.py (the post does not "
                                         "print its constants)"}
    return xv, torch.from_numpy(ds.y_val).long().to(dev)


def _begin_epoch(torch, model, dev):
    """The model in training mode and the epoch's running (loss, correct) sums, zeros on the device."""
    model.train()
    return torch.zeros(2, device=dev)


def _accumulate(sums, pair):
    sums += pair  # in place on the device: no read-back, no new tensor per step
    return sums


def fit(stack: Stack, workload: Workload, ds: Dataset, cell: Cell, settings: TorchEpochSettings,
        telemetry=None) -> EpochResult:
    """Train ``workload`` with a plain PyTorch loop as ``cell`` says (``EpochInputs``), return the record blocks.

    ``settings``: ``bench.core.families.torch.TorchEpochSettings`` (defaults, allowed values and meaning there). The
    workload's augmentation, where its source had one and ``augment`` is not false, replaces the data pipeline
    (``augmented_loader``). ``metrics.fit_call_s_per_epoch`` is the 2017 comparison's
    metric (``bench.instruments.timing.fit_metrics``): the whole training loop, every epoch and its validation, between
    barriers, over the epochs (``metrics.fit_call_s`` the loop itself); each epoch from its begin to after its
    validation is in ``metrics.fit_epoch_s``; the loop is ``bench.models.engines.epochloop.train_epochs``.

    Raises:
        Unsupported: ``compile`` asked for and the image lacks torch.compile's toolchain
            (``toolchain.torch_compile_blocker``: a C++ compiler on CPU, a C compiler on GPU); ``augment`` asked
            for where the source has none, or with another data pipeline; the torchvision pipeline on a
            dataset other than MNIST.
    """
    import torch

    device, inputs = cell.device, cell.inputs_as(EpochInputs)
    epochs, batch_size = inputs.epochs, inputs.batch_size
    augmenting = checked_augment(settings, workload)
    if settings.compile != "none":
        toolchain.require_torch_compile(device, f"compile={settings.compile}")
    effective = _effective_settings(torch, settings)
    torch.manual_seed(0)
    dev = torch.device("cuda" if device == "gpu" else "cpu")
    model = workload.build_torch(ds.meta).to(dev)
    step, loss, loss_fn, step_model = _trainer(torch, model, workload, settings, dev, effective)
    batches, trained = _train_data(torch, settings, ds, workload, batch_size, dev, augmenting, effective)
    xv, yv = _validation_data(torch, settings.data_pipeline, augmenting, ds, workload, dev, effective)
    amp_dtype = autocast_dtype(torch, settings.precision)
    settle = None
    if records_graphs(settings.compile, device):
        step, settle = settler(torch, step, model, loss, lambda: _validation_outputs(
            torch, step_model, xv, yv, batch_size, amp_dtype, one_per_size=True))
    steps = EpochSteps(batches, lambda: _begin_epoch(torch, model, dev), step, _accumulate, lambda t: t.tolist(),
                       lambda: _evaluate(torch, step_model, loss_fn, xv, yv, batch_size, amp_dtype), settle)
    barrier = make_barrier("torch", device)
    timing = LoopTiming(barrier, barrier, Cadence.parse(settings.sync), telemetry)
    metrics, hist = train_epochs(steps, timing, epochs, batch_size, trained)
    total = int(sum(p.numel() for p in model.parameters()))
    return EpochResult(
        settings=effective,
        metrics=metrics,
        history=hist,
        model=Model(params_total=total, params_effective=effective_param_count(model),
                    params_trainable=int(sum(p.numel() for p in model.parameters() if p.requires_grad))),
        memory=Memory(device_peak_bytes=frameworks.device_peak_bytes("torch", device)),
        profile_run=rerun.loop(step, batches, before=model.train),
    )

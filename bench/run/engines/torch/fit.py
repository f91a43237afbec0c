"""A plain, idiomatic PyTorch training loop: tensors preloaded on the device (the validation set always, the
training set by default), a shuffled index per epoch, the workload's optimizer with its source's hyper-parameters.
The loss and accuracy are summed on the device and read back once per epoch at the default ``sync=epoch`` (every
step only under ``sync=step``), where Keras' ``fit(verbose=1)`` fetches its logs after every step: the classic
table's row on the twins' loop. The data pipelines are ``bench.run.engines.torch.data``'s.
"""

from __future__ import annotations

from typing import Any

from bench.core.families.torch import TorchFitSettings
from bench.core.knobs import augment_in_effect, augmentation_problem
from bench.core.stacks import Stack
from bench.results.schema import EffectiveSettings, Memory, Metrics, Model
from bench.run.datasets import Dataset
from bench.run.engines import EpochResult, Unsupported, frameworks, math_mode, toolchain
from bench.run.engines.frameworks import make_barrier
from bench.run.engines.torch.data import (
    AUGMENTED_PLACEMENT,
    MNIST_NORMALIZE,
    augmented_loader,
    loader_kwargs,
    make_batches,
    on_device,
    placement,
    to_tensors,
)
from bench.run.timing import Cadence, EpochClock, EpochTimer, clock, fit_metrics
from bench.run.workloads import Workload


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


def _evaluate(torch, model, loss_fn, xs, y, batch_size: int) -> tuple[float, float]:
    model.eval()
    total, correct, n = 0.0, 0, int(y.shape[0])
    with torch.no_grad():
        for i in range(0, n, batch_size):
            out = model(*(x[i:i + batch_size] for x in xs))
            yb = y[i:i + batch_size]
            total += float(loss_fn(out, yb)) * yb.shape[0]
            correct += int((out.argmax(1) == yb).sum())
    return total / n, correct / n


def fit(stack: Stack, workload: Workload, ds: Dataset, device: str, epochs: int, batch_size: int,
        settings: TorchFitSettings, telemetry=None) -> EpochResult:
    """Train ``workload`` with a plain PyTorch loop and return the record blocks.

    ``settings``: ``bench.core.families.torch.TorchFitSettings`` (defaults, allowed values and meaning there). The
    workload's augmentation, where its source had one and ``augment`` is not false, replaces the data pipeline
    (``augmented_loader``). ``metrics.fit_s_per_epoch`` is the 2017 comparison's metric with
    Keras 2.0.8's progress-bar definition (``bench.run.timing.EpochClock``): each epoch from its begin to after its
    validation, barriers ours, averaged; ``metrics.fit_call_s`` is the whole loop (``fit_metrics``).

    Raises:
        Unsupported: ``compile`` asked for and the image lacks torch.compile's toolchain
            (``toolchain.torch_compile_blocker``: a C++ compiler on CPU, a C compiler on GPU); ``augment`` asked
            for where the source has none, or with another data pipeline; the torchvision pipeline on a
            dataset other than MNIST.
    """
    import torch

    reason = augmentation_problem(settings, workload.name, workload.augmentation is not None)
    if reason:
        raise Unsupported(reason)
    augmenting = augment_in_effect(settings, workload.augmentation is not None)
    pipeline, mode, precision = settings.data_pipeline, settings.compile, settings.precision
    if mode != "none":
        toolchain.require_torch_compile(device, f"compile={mode}")
    effective = EffectiveSettings(torch_version=torch.__version__)
    effective.update({"precision": precision, "compile": mode, "data_pipeline": pipeline,
                      "num_workers": settings.num_workers,
                      # tensors_on_device holds the data on the device whatever preload says
                      "preload": settings.preload or pipeline == "tensors_on_device"})
    effective.update(math_mode.set_tf32("torch", settings.tf32))
    torch.manual_seed(0)
    dev = torch.device("cuda" if device == "gpu" else "cpu")
    model = workload.build_torch(ds.meta).to(dev)
    opt = make_optimizer(torch, model.parameters(), workload)
    scheduler = make_scheduler(torch, opt, workload)
    effective.optimizer = optimizer_record(opt, workload)
    loss_fn = torch.nn.CrossEntropyLoss()
    effective.loss = "CrossEntropyLoss (logits)"
    step_model = model if mode == "none" else torch.compile(model) if mode == "default" else \
        torch.compile(model, mode=mode)
    amp_dtype = {"float16_autocast": torch.float16, "bfloat16_autocast": torch.bfloat16}.get(precision)
    scaler = torch.amp.GradScaler(dev.type) if settings.grad_scaler else None
    effective.extra["grad_scaler"] = scaler is not None
    n = trained = ds.n_train
    effective.extra["augment"] = augmenting
    aug = workload.augmentation
    if augmenting and aug is not None:  # augment_in_effect: only a workload with an augmentation augments
        loader, effective.augmentation = augmented_loader(torch, aug, ds, workload, batch_size, dev)
        batches = on_device(loader, dev)
        effective.update({"data_pipeline": "host_augmentation", "train_data_placement": AUGMENTED_PLACEMENT,
                          "num_workers": aug.workers, "preload": False, "shuffle_buffer": n,
                          "pin_memory": loader.pin_memory, "persistent_workers": loader.persistent_workers})
        trained = n // batch_size * batch_size if aug.drop_remainder else n
    else:
        batches = make_batches(torch, pipeline, settings, ds, workload, batch_size, dev)
        effective.shuffle_buffer = n  # a full permutation each epoch (randperm, DataLoader(shuffle=True))
        effective.train_data_placement = placement(pipeline, settings.preload)
        if pipeline != "tensors_on_device":  # the DataLoader's options as they took effect (loader_kwargs)
            kw = loader_kwargs(torch, batch_size, settings.num_workers, dev, settings.pin_memory,
                               settings.persistent_workers)
            effective.update({"pin_memory": kw["pin_memory"], "persistent_workers": kw["persistent_workers"]})
    xv = to_tensors(torch, ds.x_val, workload.torch_layout, dev)
    if pipeline == "torchvision_dataset_transforms" and not augmenting:
        # validate on what the model trains on: the transform's normalised pixels
        (mean,), (std,) = MNIST_NORMALIZE
        xv = tuple((x - mean) / std for x in xv)
        effective.normalize = {"mean": list(MNIST_NORMALIZE[0]), "std": list(MNIST_NORMALIZE[1]),
                               "source": "assumed: MNIST's, as pytorch/examples mnist/main.py (the post does not "
                                         "print its constants)"}
    yv = torch.from_numpy(ds.y_val).long().to(dev)
    barrier = make_barrier("torch", device)
    cadence = Cadence.parse(settings.sync)
    timer = EpochTimer(barrier, telemetry, cadence)
    epoch_clock = EpochClock(barrier)
    # sync=step reads the loss back every step, as Keras' verbose=1 does for its progress logs; the other cadences
    # add it up on the device and read it once per epoch, after the timed steps
    read_every_step = cadence.every == 1
    hist: dict[str, list[float]] = {"accuracy": [], "loss": [], "val_accuracy": [], "val_loss": []}

    try:
        barrier()
        start = clock()
        for _ in range(epochs):
            epoch_clock.begin()
            timer.begin_epoch()
            model.train()
            loss_sum, correct = 0.0, 0
            totals = torch.zeros(2, device=dev)
            for xb, yb in batches():
                with torch.autocast(dev.type, dtype=amp_dtype, enabled=amp_dtype is not None):
                    out = step_model(*xb)
                    loss = loss_fn(out, yb)
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
                batch_totals = torch.stack([loss.detach().float() * yb.numel(), (out.argmax(1) == yb).sum().float()])
                if read_every_step:
                    batch_loss, batch_correct = batch_totals.tolist()
                    loss_sum += batch_loss
                    correct += int(batch_correct)
                else:
                    totals += batch_totals
                timer.end_step()
            timer.end_epoch()
            if not read_every_step:
                epoch_loss, epoch_correct = totals.tolist()
                loss_sum, correct = epoch_loss, int(epoch_correct)
            val_loss, val_acc = _evaluate(torch, model, loss_fn, xv, yv, batch_size)
            hist["loss"].append(loss_sum / trained)
            hist["accuracy"].append(correct / trained)
            hist["val_loss"].append(val_loss)
            hist["val_accuracy"].append(val_acc)
            epoch_clock.end()
        barrier()
        fit_call_s = clock() - start
    finally:
        if telemetry:
            telemetry.stop()

    total = int(sum(p.numel() for p in model.parameters()))
    metrics = Metrics(**timer.summary(batch_size, trained))
    metrics.update(fit_metrics(epoch_clock.epoch_s, fit_call_s))
    return EpochResult(
        settings=effective,
        metrics=metrics,
        history=hist,
        model=Model(params_total=total, params_effective=effective_param_count(model),
                    params_trainable=int(sum(p.numel() for p in model.parameters() if p.requires_grad))),
        memory=Memory(device_peak_bytes=frameworks.device_peak_bytes("torch", device)),
    )


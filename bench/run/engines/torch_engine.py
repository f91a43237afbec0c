"""A plain, idiomatic PyTorch training loop: tensors preloaded on the device (the validation set always, the
training set by default), a shuffled index per epoch, the workload's optimizer with its source's hyper-parameters.
The loss and accuracy are summed on the device and read back once per epoch at the default ``sync=epoch`` (every
step only under ``sync=step``), where Keras' ``fit(verbose=1)`` fetches its logs after every step: the classic
table's row on the twins' loop.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.core.knobs import TorchFitSettings, augment_in_effect, augmentation_problem
from bench.core.stacks import Stack
from bench.results.schema import EffectiveSettings, Memory, Metrics, Model
from bench.run.datasets import Dataset
from bench.run.engines import EpochResult, Unsupported, frameworks, math_mode, toolchain
from bench.run.engines.frameworks import make_barrier
from bench.run.timing import Cadence, EpochClock, EpochTimer, clock, fit_metrics
from bench.run.workloads import Augmentation, Workload

#: Normalize constants of the torchvision pipeline: MNIST's mean and std, as PyTorch's own MNIST example
#: (pytorch/examples mnist/main.py) uses them. The tuning study's post does not print its constants: our assumption.
MNIST_NORMALIZE = ((0.1307,), (0.3081,))


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


def to_tensors(torch, xs: tuple[np.ndarray, ...], layout, dev):
    out = []
    for i, x in enumerate(xs):
        perm = layout[i] if layout else None
        arr = np.ascontiguousarray(x.transpose(perm)) if perm else x
        t = torch.from_numpy(arr)
        out.append((t.long() if t.dtype == torch.int32 else t).to(dev))
    return tuple(out)


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


def idx_bytes(array: np.ndarray) -> bytes:
    """``array`` (uint8, 1 to 3 axes) in the IDX format of MNIST's files: magic ``0x0000 08 <ndim>``, each axis's
    length as a big-endian int32, then the bytes (what torchvision's ``read_sn3_pascalvincent_tensor`` reads).

    Raises:
        ValueError: not uint8.
    """
    if array.dtype != np.uint8:
        raise ValueError(f"IDX files here hold uint8, got {array.dtype}")
    header = bytes([0, 0, 0x08, array.ndim]) + np.asarray(array.shape, dtype=">i4").tobytes()
    return header + np.ascontiguousarray(array).tobytes()


def write_mnist_idx(root: Path, ds: Dataset) -> Path:
    """Write ``ds`` (MNIST-shaped images in [0, 1], (N, 28, 28, 1)) as the four raw files
    ``torchvision.datasets.MNIST(root, download=False)`` reads: ``root/MNIST/raw/{train,t10k}-images-idx3-ubyte``
    and ``-labels-idx1-ubyte`` (train: ``x_train``; t10k: ``x_val``). Pixels go back to uint8 (x * 255, rounded:
    exact for the real data, which came from uint8). Returns the raw folder."""
    raw = Path(root) / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for prefix, xs, y in (("train", ds.x_train, ds.y_train), ("t10k", ds.x_val, ds.y_val)):
        images = np.clip(np.rint(xs[0][..., 0] * 255.0), 0, 255).astype(np.uint8)
        (raw / f"{prefix}-images-idx3-ubyte").write_bytes(idx_bytes(images))
        (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(idx_bytes(y.astype(np.uint8)))
    return raw


def torchvision_mnist(ds: Dataset):
    """The tuning study's "torchvision dataset" pipeline: ``torchvision.datasets.MNIST(root, train=True,
    transform=Compose([ToTensor(), Normalize(*MNIST_NORMALIZE)]), download=False)`` over the cell's MNIST arrays
    (real or synthetic) written as MNIST's IDX files in a scratch directory (removed once read: torchvision
    holds the images in memory). Each item is a PIL image made on the fly and transformed, as the study ran it.

    Raises:
        Unsupported: ``ds`` is not MNIST-shaped.
    """
    from torchvision import datasets, transforms

    if ds.name != "mnist" or len(ds.x_train) != 1 or ds.x_train[0].shape[1:] != (28, 28, 1):
        raise Unsupported(f"torchvision_dataset_transforms reads torchvision.datasets.MNIST (the tuning study's "
                          f"pipeline); this workload trains on {ds.name}")
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(*MNIST_NORMALIZE)])
    with tempfile.TemporaryDirectory(prefix="bench-mnist-") as root:
        write_mnist_idx(Path(root), ds)
        return datasets.MNIST(root, train=True, transform=transform, download=False)


class AugmentedImages:
    """A map-style dataset: image i (a CHW float tensor) through ``transform`` each time it is read, and its
    label. Module-level, so DataLoader workers can pickle it under any start method."""

    def __init__(self, images, labels, transform):
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        return self.transform(self.images[i]), self.labels[i]


def augment_transform(aug: Augmentation, height: int, width: int):
    """torchvision transforms that do ``aug`` to one (C, H, W) image, as ImageDataGenerator.random_transform did
    (keras/preprocessing/image.py@2.0.8:555-612): a shift of ``round(uniform(-r, r) * size)`` pixels per axis
    (``v2.RandomAffine``, torchvision/transforms/v2/_geometry.py@v0.28.0:748-751, draws exactly that), the pixels
    shifted in repeating the edge (2.0.8's ``fill_mode='nearest'``: an edge ``Pad`` wide enough for the largest
    shift, then ``CenterCrop`` back), then a left-right flip with probability 0.5.

    Raises:
        ValueError: a fill mode or interpolation other than ``nearest``.
    """
    from torchvision.transforms import InterpolationMode, v2

    if (aug.fill_mode, aug.interpolation) != ("nearest", "nearest"):
        raise ValueError("the PyTorch augmentation implements fill_mode and interpolation 'nearest' only")
    pad = math.ceil(max(aug.height_shift_range * height, aug.width_shift_range * width))
    # RandomAffine draws a shift as a fraction of the (padded) image it sees
    translate = (aug.width_shift_range * width / (width + 2 * pad),
                 aug.height_shift_range * height / (height + 2 * pad))
    steps = [v2.Pad(pad, padding_mode="edge"),
             v2.RandomAffine(degrees=0.0, translate=translate, interpolation=InterpolationMode.NEAREST),
             v2.CenterCrop((height, width))]
    if aug.horizontal_flip:
        steps.append(v2.RandomHorizontalFlip(0.5))
    return v2.Compose(steps)


#: Where augmented batches come from (``settings.train_data_placement``).
AUGMENTED_PLACEMENT = "host (DataLoader: per-image augmentation by one background worker process, batches queued)"


def augmented_loader(torch, aug: Augmentation, ds: Dataset, workload: Workload, batch_size: int, dev):
    """A DataLoader of augmented training batches, as Keras 2.0.8's ``fit_generator(datagen.flow(...))`` ran them
    (examples/cifar10_cnn.py@2.0.8:104-107; keras/engine/training.py@2.0.8:1839-1841): shuffled each epoch, each
    image augmented on its own (``augment_transform``) on the host by ``aug.workers`` background worker(s) that
    keep ``aug.max_queue_size`` batches queued (``prefetch_factor``) while the device trains, ``n // batch``
    steps an epoch (``drop_last``). A worker is a process here (the source's was a thread): a Python thread
    would share the training loop's interpreter lock. ``persistent_workers``: the source started one enqueuer
    for the whole fit (keras/engine/training.py@2.0.8:1991-2006); ``pin_memory`` on a CUDA device is ours (the
    source had no such step), recorded in the returned block and disclosed in docs/suites/classic.md.

    Returns:
        the loader, and the ``settings.augmentation`` block (the parameters and how they ran).

    Raises:
        ValueError: the workload has more than one input, or fewer training examples than a batch.
    """
    aug.check(len(ds.x_train), ds.n_train, batch_size)
    (images,) = to_tensors(torch, ds.x_train, workload.torch_layout, torch.device("cpu"))
    _, _, height, width = images.shape
    transform = augment_transform(aug, height, width)
    dataset = AugmentedImages(images, torch.from_numpy(ds.y_train).long(), transform)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=batch_size, shuffle=True, num_workers=aug.workers, persistent_workers=True,
        prefetch_factor=max(aug.max_queue_size // aug.workers, 1), drop_last=aug.drop_remainder,
        pin_memory=dev.type == "cuda", generator=torch.Generator(device="cpu").manual_seed(0))
    how = {**aug.record(), "where": AUGMENTED_PLACEMENT, "shuffle_buffer": ds.n_train,
           "persistent_workers": loader.persistent_workers, "pin_memory": loader.pin_memory,
           "implementation": "torchvision.transforms.v2: " + " -> ".join(map(repr, transform.transforms))
           .replace("\n", "")}
    return loader, how


def loader_kwargs(torch, batch_size: int, workers: int, dev, pin_memory: bool = False,
                  persistent_workers: bool = False) -> dict[str, Any]:
    """``DataLoader`` arguments shared by the loader pipelines: shuffled every epoch, seeded.

    ``pin_memory`` and ``persistent_workers`` default to PyTorch's own ``DataLoader`` defaults, both False
    (torch/utils/data/dataloader.py@v2.13.0): what the tuning study is assumed to have run (its table gives the
    pipelines and ``num_workers`` only: docs/suites/tuning.md); True for either is a named variant
    (``TorchFitSettings``). Each is passed only where it can take effect: pinning with a CUDA device, persistence
    with worker processes (torch raises "persistent_workers option needs num_workers > 0" otherwise).

    The shuffle generator lives on the CPU whatever ``dev`` is: torch's ``RandomSampler`` draws its
    permutation on the CPU and raises "Expected a 'cpu' device type for generator" when given a CUDA
    one (torch 2.13). Tensors preloaded on the GPU are indexed with those CPU indices, which works.
    """
    return {"batch_size": batch_size, "shuffle": True, "num_workers": workers,
            "persistent_workers": persistent_workers and workers > 0,
            "pin_memory": pin_memory and dev.type == "cuda",
            "generator": torch.Generator(device="cpu").manual_seed(0)}


def placement(pipeline: str, preload: bool) -> str:
    """Where ``make_batches`` makes each training batch of ``pipeline`` (``settings.train_data_placement``: its
    first word, ``host`` or ``device``, is what the report's Keras-overhead rows compare).

    Raises:
        ValueError: an unknown pipeline.
    """
    if pipeline == "tensors_on_device":
        return "device (torch tensors: the whole set on the device; a shuffled index per step)"
    if pipeline == "tensor_dataset":
        return ("device (TensorDataset of tensors preloaded on the device, DataLoader batches)" if preload else
                "host (TensorDataset + DataLoader on the CPU; each batch copied to the device)")
    if pipeline == "torchvision_dataset_transforms":
        return "host (torchvision MNIST dataset, per-image transforms in the DataLoader; each batch copied)"
    raise ValueError(f"unknown data_pipeline {pipeline!r}")


def make_batches(torch, pipeline: str, settings: TorchFitSettings, ds: Dataset, workload: Workload,
                 batch_size: int, dev):
    """An epoch-iterable of (inputs tuple, labels) on ``dev`` for the chosen data pipeline."""
    n = ds.n_train
    if pipeline == "tensors_on_device":
        xs = to_tensors(torch, ds.x_train, workload.torch_layout, dev)
        y = torch.from_numpy(ds.y_train).long().to(dev)

        def epoch():
            order = torch.randperm(n, device=dev)
            for i in range(0, n, batch_size):
                idx = order[i:i + batch_size]
                yield tuple(x[idx] for x in xs), y[idx]

        return epoch
    loader_kw = loader_kwargs(torch, batch_size, settings.num_workers, dev, settings.pin_memory,
                              settings.persistent_workers)
    if pipeline == "tensor_dataset":
        target = dev if settings.preload else torch.device("cpu")
        xs = to_tensors(torch, ds.x_train, workload.torch_layout, target)
        y = torch.from_numpy(ds.y_train).long().to(target)
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*xs, y), **loader_kw)
    elif pipeline == "torchvision_dataset_transforms":
        loader = torch.utils.data.DataLoader(torchvision_mnist(ds), **loader_kw)
    else:
        raise ValueError(f"unknown data_pipeline {pipeline!r}")

    return _on_device(loader, dev)


def _on_device(loader, dev):
    """An epoch-iterable of a DataLoader's (inputs tuple, labels) batches moved to ``dev``."""

    def loader_epoch():
        for *xb, yb in loader:
            yield tuple(x.to(dev, non_blocking=True) for x in xb), yb.to(dev, non_blocking=True)

    return loader_epoch


def fit(stack: Stack, workload: Workload, ds: Dataset, device: str, epochs: int, batch_size: int,
        settings: TorchFitSettings, telemetry=None) -> EpochResult:
    """Train ``workload`` with a plain PyTorch loop and return the record blocks.

    ``settings``: ``bench.core.knobs.TorchFitSettings`` (defaults, allowed values and meaning there). The workload's
    augmentation, where its source had one and ``augment`` is not false, replaces the data pipeline
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
        batches = _on_device(loader, dev)
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

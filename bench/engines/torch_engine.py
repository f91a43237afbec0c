"""A plain, idiomatic PyTorch training loop: tensors preloaded on the device, a shuffled index per
epoch, the optimizer Keras uses with Keras' defaults, loss read back every step (as Keras does).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.datasets import Dataset
from bench.engines import EpochResult, frameworks
from bench.knobs import TorchFitSettings
from bench.stacks import Stack
from bench.timing import Cadence, EpochTimer, make_barrier
from bench.workloads import Workload


def make_optimizer(torch, params, workload: Workload):
    """Keras' RMSprop/Adam defaults (rho 0.9, epsilon 1e-7), so both sides train with the same rule."""
    if workload.optimizer == "rmsprop":
        return torch.optim.RMSprop(params, lr=workload.learning_rate, alpha=0.9, eps=1e-7)
    if workload.optimizer == "adam":
        return torch.optim.Adam(params, lr=workload.learning_rate, eps=1e-7)
    raise ValueError(f"unknown optimizer {workload.optimizer!r}")


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


class TransformDataset:
    """A torchvision-style dataset: one uint8 image per item, turned into a float tensor by a per-item
    transform with ``ToTensor`` semantics (HWC uint8 -> CHW float in [0, 1], the same values the other
    pipelines feed). Deliberately per item: this is the pipeline the tuning study measured."""

    def __init__(self, images_u8: np.ndarray, labels: np.ndarray):
        self.images, self.labels = images_u8, labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        import torch

        x = torch.from_numpy(np.ascontiguousarray(self.images[i].transpose(2, 0, 1))).float().div_(255.0)
        return x, int(self.labels[i])


def loader_kwargs(torch, batch_size: int, workers: int, dev) -> dict[str, Any]:
    """``DataLoader`` arguments shared by the loader pipelines: shuffled every epoch, seeded.

    The shuffle generator lives on the CPU whatever ``dev`` is: torch's ``RandomSampler`` draws its
    permutation on the CPU and raises "Expected a 'cpu' device type for generator" when given a CUDA
    one (torch 2.13). Tensors preloaded on the GPU are indexed with those CPU indices, which works.
    """
    return {"batch_size": batch_size, "shuffle": True, "num_workers": workers,
            "persistent_workers": workers > 0, "pin_memory": dev.type == "cuda" and workers > 0,
            "generator": torch.Generator(device="cpu").manual_seed(0)}


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
    loader_kw = loader_kwargs(torch, batch_size, settings.num_workers, dev)
    if pipeline == "tensor_dataset":
        target = dev if settings.preload else torch.device("cpu")
        xs = to_tensors(torch, ds.x_train, workload.torch_layout, target)
        y = torch.from_numpy(ds.y_train).long().to(target)
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*xs, y), **loader_kw)
    elif pipeline == "torchvision_dataset_transforms":
        if len(ds.x_train) != 1 or ds.x_train[0].ndim != 4:
            raise ValueError("torchvision_dataset_transforms needs a workload with one image input (NHWC)")
        raw = np.clip(np.rint(ds.x_train[0] * 255.0), 0, 255).astype(np.uint8)  # images are stored in [0, 1]
        dataset = TransformDataset(raw, ds.y_train)
        loader = torch.utils.data.DataLoader(dataset, **loader_kw)
    else:
        raise ValueError(f"unknown data_pipeline {pipeline!r}")

    def loader_epoch():
        for *xb, yb in loader:
            yield tuple(x.to(dev, non_blocking=True) for x in xb), yb.to(dev, non_blocking=True)

    return loader_epoch


def fit(stack: Stack, workload: Workload, ds: Dataset, device: str, epochs: int, batch_size: int,
        settings: TorchFitSettings, telemetry=None) -> EpochResult:
    """Train ``workload`` with a plain PyTorch loop and return the record blocks.

    ``settings``: ``bench.knobs.TorchFitSettings`` (defaults, allowed values and meaning there).

    Raises:
        Unsupported: ``compile`` asked for and the image lacks torch.compile's toolchain
            (``frameworks.torch_compile_blocker``: a C++ compiler on CPU, a C compiler on GPU).
    """
    import torch

    pipeline, mode, precision = settings.data_pipeline, settings.compile, settings.precision
    if mode != "none":
        frameworks.require_torch_compile(device, f"compile={mode}")
    effective: dict[str, Any] = {"torch_version": torch.__version__, "precision": precision, "compile": mode,
                                 "data_pipeline": pipeline, "num_workers": settings.num_workers,
                                 # tensors_on_device holds the data on the device whatever preload says
                                 "preload": settings.preload or pipeline == "tensors_on_device"}
    effective.update(frameworks.set_tf32("torch", settings.tf32))
    torch.manual_seed(0)
    dev = torch.device("cuda" if device == "gpu" else "cpu")
    model = workload.build_torch(ds.meta).to(dev)
    opt = make_optimizer(torch, model.parameters(), workload)
    loss_fn = torch.nn.CrossEntropyLoss()
    step_model = model if mode == "none" else torch.compile(model, **({} if mode == "default" else {"mode": mode}))
    amp_dtype = {"float16_autocast": torch.float16, "bfloat16_autocast": torch.bfloat16}.get(precision)
    scaler = torch.amp.GradScaler(dev.type) if settings.grad_scaler else None
    effective["grad_scaler"] = scaler is not None
    batches = make_batches(torch, pipeline, settings, ds, workload, batch_size, dev)
    xv = to_tensors(torch, ds.x_val, workload.torch_layout, dev)
    yv = torch.from_numpy(ds.y_val).long().to(dev)
    n = ds.n_train
    barrier = make_barrier("torch", device)
    cadence = Cadence.parse(settings.sync)
    timer = EpochTimer(barrier, telemetry, cadence)
    # sync=step reads the loss back every step, as Keras does for its progress logs; the other cadences
    # add it up on the device and read it once per epoch, after the timed steps
    read_every_step = cadence.every == 1
    hist: dict[str, list[float]] = {"accuracy": [], "loss": [], "val_accuracy": [], "val_loss": []}

    try:
        for _ in range(epochs):
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
            hist["loss"].append(loss_sum / n)
            hist["accuracy"].append(correct / n)
            hist["val_loss"].append(val_loss)
            hist["val_accuracy"].append(val_acc)
        barrier()
    finally:
        if telemetry:
            telemetry.stop()

    total = int(sum(p.numel() for p in model.parameters()))
    return {
        "settings": effective,
        "metrics": timer.summary(batch_size, n),
        "history": hist,
        "model": {"params_total": total, "params_effective": effective_param_count(model),
                  "params_trainable": int(sum(p.numel() for p in model.parameters() if p.requires_grad))},
        "memory": {"device_peak_bytes": frameworks.device_peak_bytes("torch", device)},
    }

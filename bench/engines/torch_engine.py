"""A plain, idiomatic PyTorch training loop: tensors preloaded on the device, a shuffled index per
epoch, the optimizer Keras uses with Keras' defaults, loss read back every step (as Keras does).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.datasets import Dataset
from bench.engines import frameworks
from bench.stacks import Stack
from bench.timing import EpochTimer, make_barrier
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


def fit(stack: Stack, workload: Workload, ds: Dataset, device: str, epochs: int, batch_size: int,
        settings: dict[str, Any]) -> dict[str, Any]:
    """Train ``workload`` with a plain PyTorch loop and return the record blocks.

    Settings honoured: ``tf32`` (bool, default False). Others are recorded as requested.
    """
    import torch

    effective: dict[str, Any] = {"torch_version": torch.__version__, "precision": "float32",
                                 "compile": "none", "data_pipeline": "tensors_on_device"}
    effective.update(frameworks.set_tf32("torch", bool(settings.get("tf32", False))))
    torch.manual_seed(0)
    dev = torch.device("cuda" if device == "gpu" else "cpu")
    model = workload.build_torch(ds.meta).to(dev)
    opt = make_optimizer(torch, model.parameters(), workload)
    loss_fn = torch.nn.CrossEntropyLoss()
    xs = to_tensors(torch, ds.x_train, workload.torch_layout, dev)
    xv = to_tensors(torch, ds.x_val, workload.torch_layout, dev)
    y = torch.from_numpy(ds.y_train).long().to(dev)
    yv = torch.from_numpy(ds.y_val).long().to(dev)
    n = ds.n_train
    steps = -(-n // batch_size)
    timer = EpochTimer(make_barrier("torch", device))
    hist: dict[str, list[float]] = {"accuracy": [], "loss": [], "val_accuracy": [], "val_loss": []}

    for _ in range(epochs):
        timer.begin_epoch()
        model.train()
        order = torch.randperm(n, device=dev)
        loss_sum, correct = 0.0, 0
        for i in range(steps):
            idx = order[i * batch_size:(i + 1) * batch_size]
            out = model(*(x[idx] for x in xs))
            loss = loss_fn(out, y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            batch_loss, batch_correct = torch.stack(
                [loss.detach() * idx.numel(), (out.argmax(1) == y[idx]).sum().float()]).tolist()
            loss_sum += batch_loss
            correct += int(batch_correct)
            timer.end_step()
        val_loss, val_acc = _evaluate(torch, model, loss_fn, xv, yv, batch_size)
        hist["loss"].append(loss_sum / n)
        hist["accuracy"].append(correct / n)
        hist["val_loss"].append(val_loss)
        hist["val_accuracy"].append(val_acc)

    total = int(sum(p.numel() for p in model.parameters()))
    return {
        "settings": effective,
        "metrics": timer.summary(batch_size, n),
        "history": hist,
        "model": {"params_total": total, "params_effective": effective_param_count(model),
                  "params_trainable": int(sum(p.numel() for p in model.parameters() if p.requires_grad))},
        "memory": {"device_peak_bytes": frameworks.device_peak_bytes("torch", device)},
    }

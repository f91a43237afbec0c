"""The PyTorch family's free-running loop (``bench.models.engines.HandLoop``): what ``bench.run.fidelity`` times the
harness against, the same model and data with no hooks at all, a device barrier and a clock read around the
compiling epoch and around the others as one block.
"""

from __future__ import annotations

from bench.core.stacks import Stack
from bench.instruments.timing import time_free_running
from bench.models.datasets import Dataset
from bench.models.engines import math_mode
from bench.models.engines.frameworks import make_barrier
from bench.models.engines.torch.data import to_tensors
from bench.models.engines.torch.epochs import make_optimizer
from bench.models.workloads import Workload


def run(*, stack: Stack, workload: Workload, ds: Dataset, device: str, epochs: int, batch: int,
        tf32: str) -> dict[str, float]:
    """The free-running PyTorch loop (``HandLoop``): the bare loop over tensors on the device, no loss read-back."""
    import torch

    math_mode.set_tf32("torch", tf32)
    torch.manual_seed(0)
    dev = torch.device("cuda" if device == "gpu" else "cpu")
    model = workload.build_torch(ds.meta).to(dev)
    opt, loss_fn = make_optimizer(torch, model.parameters(), workload), torch.nn.CrossEntropyLoss()
    xs, y = to_tensors(torch, ds.x_train, workload.torch_layout, dev), torch.from_numpy(ds.y_train).long().to(dev)
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

    return time_free_running(epoch, barrier, epochs)

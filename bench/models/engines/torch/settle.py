"""What ``torch.compile`` leaves to a graph's later calls, done before the timed steps that would otherwise hold it.

CUDA graph trees (``compile=reduce-overhead``, ``max-autotune``) run a graph eagerly at its first call and record it
at its second (torch/_inductor/cudagraph_trees.py@v2.13.0:2259-2280: a function not yet in ``warmed_up_functions``
runs ``run_eager``, 2442-2463, which adds it; a later call in a new generation, 2557-2564 and 2608-2617, goes to
``record_function``, 2395-2432), with one graph per symbolic size of a dynamic graph
(``cudagraphify_impl``'s ``fn_cache``, cudagraph_trees.py@v2.13.0:413-470); each call of the compiled module is a new
generation (its enter hook, torch/_dynamo/eval_frame.py@v2.13.0:866-871, 891, increments it:
torch/_dynamo/mutation_guard.py@v2.13.0:159). The epoch engine settles in its first epoch (``settler``), the step
engine rehearses its step once after the first (``bench.models.engines.torch.steps``); both through ``untouched``,
so the training goes on as if the extra calls had not run, and only under a mode that records CUDA graphs
(``records_graphs``): elsewhere there is nothing to settle.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from bench.models.engines.epochloop import Settle


def records_graphs(mode: str, device: str) -> bool:
    """Whether ``torch.compile(mode=mode)`` (``none``: not compiled) records CUDA graphs on ``device`` (cpu, gpu):
    on a GPU, where torch itself lists the mode's options with ``triton.cudagraphs`` (reduce-overhead and
    max-autotune, torch/_inductor/__init__.py@v2.13.0:353-372); never on a CPU, where inductor skips them: a graph
    whose nodes are all on the CPU is not the one CUDA device they need (torch/_inductor/cudagraph_utils.py@v2.13.0
    :340-347; with ``graph_partition``, on by default, the CPU nodes are dropped first, 329-331)."""
    if mode == "none" or device != "gpu":
        return False
    from torch._inductor import list_mode_options

    return bool(list_mode_options(mode).get("triton.cudagraphs", False))


@contextlib.contextmanager
def untouched(torch, model) -> Iterator[None]:
    """Run the body, then put back what a forward and backward of ``model`` change besides its outputs: the CPU and
    (on a CUDA model) its device's random streams (``torch.random.fork_rng``: dropout draws), the module's buffers
    (BatchNorm's running statistics, copied back in place, so a recorded graph's addresses stay), and no
    gradients (``zero_grad(set_to_none=True)``). The body must not step an optimizer."""
    buffers = [b.detach().clone() for b in model.buffers()]
    dev = next(model.parameters()).device
    cuda = [dev.index if dev.index is not None else torch.cuda.current_device()] if dev.type == "cuda" else []
    try:
        with torch.random.fork_rng(devices=cuda):
            yield
    finally:
        model.zero_grad(set_to_none=True)
        with torch.no_grad():
            for b, saved in zip(model.buffers(), buffers, strict=True):
                b.copy_(saved)


def settler(torch, step: Callable[[Any], Any], model, forward: Callable[[Any], Any],
            validate: Callable[[], Iterable[Any]]) -> tuple[Callable[[Any], Any], Settle]:
    """(``step`` that keeps the first batch of each shape until the settling, the ``Settle``): the PyTorch epoch
    engine's ``EpochSteps.settle`` under a ``torch.compile`` mode that records CUDA graphs (``records_graphs``).

    Without it the first epoch left work for the second: a shape that runs once an epoch (a last, shorter batch;
    a single validation batch) was recorded there, and once a shorter batch made dynamo recompile the step with a
    dynamic batch size, the full batches of epoch 2 on ran that graph (the most recently used entry that
    matches), warmed up and recorded in epoch 2's first timed steps. ``Settle.steps`` runs, twice (a first call of
    a newly matched graph, then its second), a forward and backward of each training shape in epoch order
    (``forward(batch)`` -> the loss), after the first epoch's steps; ``Settle.validation`` each validation shape
    (``validate()``, iterated), twice, after its validation; all ``untouched``: the optimizer and the schedule never
    step. Where each one's time is counted: ``Settle``."""
    kept: dict[Any, Any] = {}
    settled = False

    def keeping(batch):
        if not settled:
            xb, yb = batch
            kept.setdefault(tuple(tuple(t.shape) for t in (*xb, yb)), batch)
        return step(batch)

    def steps() -> None:
        nonlocal settled
        settled = True
        with untouched(torch, model):
            model.train()
            for _ in range(2):
                for batch in kept.values():
                    forward(batch).backward()
        kept.clear()

    def validation() -> None:
        with untouched(torch, model):
            for _ in range(2):
                for _ in validate():
                    pass

    return keeping, Settle(steps, validation)

"""The PyTorch epoch engine under ``torch.compile``: every graph's first and second call (CUDA graph trees warm a
graph up at its first call and record it at its second, one graph per size of a dynamic graph:
torch/_inductor/cudagraph_trees.py@v2.13.0:413-470, 2259-2280) land in the first epoch's span, never in a later
epoch. Without a GPU: a recording backend splits each step as inductor does (forward, backward, inference graphs
through AOT autograd), runs the graphs eagerly and counts each graph's calls per integer (symbolic size) input."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import needs_torch
from tests.helpers.cells import engine_cell


def _recording_backend(events: list[tuple]):
    """A ``torch.compile`` backend that splits a step as inductor does (AOT autograd: forward, backward, inference
    graphs), runs each graph eagerly and appends ``("compile", graph)`` and ``("call", graph, sizes)`` to
    ``events``, ``sizes`` the graph's integer inputs (what CUDA graph trees key a dynamic graph's recordings on)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    def compiler(kind: str):
        def compile_graph(gm, example_inputs):
            graph = f"{kind}{sum(e[0] == 'compile' for e in events)}"
            events.append(("compile", graph))
            run = make_boxed_func(gm)

            def call(args):
                events.append(("call", graph, tuple(a for a in args if isinstance(a, int))))
                return run(args)
            call._boxed_call = True  # type: ignore[attr-defined]
            return call
        return compile_graph

    return aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                        inference_compiler=compiler("inference"))


def _compile_with(monkeypatch, events: list[tuple], as_gpu: bool = True) -> None:
    """``torch.compile`` (any mode) through ``_recording_backend``, with no C++ compiler needed; ``as_gpu``: the
    engines take this CPU for a GPU where they ask whether the mode records CUDA graphs (``records_graphs``)."""
    import torch

    from bench.models.engines import toolchain
    from bench.models.engines.torch import epochs as torch_epochs
    from bench.models.engines.torch import settle
    from bench.models.engines.torch import steps as torch_steps

    for module in (torch_epochs, torch_steps):
        monkeypatch.setattr(module, "records_graphs",
                            lambda mode, device: settle.records_graphs(mode, "gpu" if as_gpu else device))

    real_compile, backend = torch.compile, _recording_backend(events)
    monkeypatch.setattr(torch, "compile", lambda model, **kw: real_compile(model, backend=backend))
    monkeypatch.setattr(toolchain, "require_torch_compile", lambda *a: None)
    torch._dynamo.reset()


def _fit(monkeypatch, n_train: int, n_val: int, epochs: int = 3, batch: int = 8,
         mode: str = "reduce-overhead", as_gpu: bool = True) -> tuple[list[tuple], Any]:
    """Fit mnist_mlp under ``compile=mode`` with the recording backend; (the events in order:
    ``("epoch",)`` at each epoch's begin, then the backend's; the result)."""
    import torch

    from bench.core.families.torch import TorchEpochSettings
    from bench.core.stacks import get_stack
    from bench.models import datasets
    from bench.models.engines.torch import epochs as torch_epochs
    from bench.models.workloads import get_workload

    events: list[tuple] = []
    _compile_with(monkeypatch, events, as_gpu)
    real_begin = torch_epochs._begin_epoch
    monkeypatch.setattr(torch_epochs, "_begin_epoch", lambda *a: (events.append(("epoch",)), real_begin(*a))[1])
    w = get_workload("mnist_mlp")
    ds = w.prepare(datasets.synthetic("mnist", n_train, n_val, "test"))
    try:
        result = torch_epochs.fit(get_stack("pytorch"), w, ds, engine_cell("pytorch", w, epochs, batch),
                                  TorchEpochSettings(compile=mode))
    finally:
        torch._dynamo.reset()
    return events, result


def _calls_after_the_first_epoch(events: list[tuple]) -> list[tuple[str, tuple, int]]:
    """Each graph call after the first epoch's span (the first timed window: the epoch engine's first epoch, the
    step engine's first step): (graph, sizes, which call of that graph at those sizes)."""
    seen: Counter[tuple] = Counter()
    epoch, out = 0, []
    for event in events:
        if event[0] == "epoch":
            epoch += 1
        elif event[0] == "compile":
            assert epoch == 1, f"{event[1]} compiled in epoch {epoch}"
        else:
            seen[event[1:]] += 1
            if epoch > 1:
                out.append((event[1], event[2], seen[event[1:]]))
    return out


@needs_torch
@pytest.mark.parametrize(("n_train", "n_val"), [
    (20, 12),  # a shorter last batch in training and validation: dynamo recompiles with a dynamic batch size
    (16, 8),   # full batches only; one validation batch, which runs once an epoch
])
def test_no_graph_is_warmed_up_or_recorded_after_the_first_epoch(monkeypatch, n_train, n_val):
    """Epochs 2 and 3 (their timed steps and their validation) only replay: every call there is a graph's third
    or later at its sizes. Before the settling, epoch 2 ran the dynamic training graph's first and second calls at
    the full batch size (its first timed steps) and the shorter batches' second calls."""
    events, result = _fit(monkeypatch, n_train, n_val)
    later = _calls_after_the_first_epoch(events)
    assert later and all(n >= 3 for _, _, n in later), [c for c in later if c[2] < 3]
    assert {g.rstrip("0123456789") for g, _, _ in later} == {"forward", "backward", "inference"}
    assert len(result.history["val_loss"]) == 3
    assert 0 < result.metrics.graph_warmup_s < result.metrics.fit_epoch_s[0]


@needs_torch
@pytest.mark.parametrize(("mode", "settles"), [("default", False), ("max-autotune-no-cudagraphs", False),
                                               ("reduce-overhead", True), ("max-autotune", True)])
def test_only_a_mode_that_records_cuda_graphs_settles(monkeypatch, mode, settles):
    """torch's own table of its modes decides (``triton.cudagraphs``), on a GPU only (inductor records none on a
    CPU); a mode without CUDA graphs runs no extra call, and its record holds no ``graph_warmup_s``."""
    from bench.models.engines.torch.settle import records_graphs

    assert records_graphs(mode, "gpu") is settles and records_graphs(mode, "cpu") is False
    assert records_graphs("none", "gpu") is False
    if mode in ("default", "reduce-overhead"):
        _, result = _fit(monkeypatch, 20, 12, mode=mode)
        assert ("graph_warmup_s" in result.metrics.model_fields_set) is settles
        _, on_cpu = _fit(monkeypatch, 20, 12, mode=mode, as_gpu=False)
        assert "graph_warmup_s" not in on_cpu.metrics.model_fields_set


@needs_torch
def test_the_settling_leaves_the_training_as_it_was(monkeypatch):
    """mnist_mlp has dropout: the settling's extra forwards draw random numbers, which it puts back, and it never
    steps the optimizer. The history is the same as without the settling, to the last bit."""
    from bench.models.engines.torch import epochs as torch_epochs

    _, settled = _fit(monkeypatch, 20, 12)
    monkeypatch.setattr(torch_epochs, "settler", lambda torch, step, *a: (step, None))
    _, unsettled = _fit(monkeypatch, 20, 12)
    assert settled.history == unsettled.history


@needs_torch
def test_the_settling_puts_back_buffers_random_state_and_gradients():
    """A BatchNorm's running statistics, the random stream and the gradients are as before ``settle``; every
    training shape (kept from the steps) and validation batch ran twice."""
    import torch

    from bench.models.engines.torch.settle import settler

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Dropout(0.5))
    sizes: list[tuple[str, int]] = []
    model.register_forward_hook(lambda m, i, o: sizes.append(("train" if m.training else "eval", o.shape[0])))

    def forward(batch):
        return model(*batch[0]).sum()

    step, settle = settler(torch, lambda batch: forward(batch), model, forward,
                            lambda: (model.eval(), [model(torch.ones(2, 3))])[1])
    for n in (5, 5, 2):
        step(((torch.randn(n, 3),), torch.zeros(n)))
    sizes.clear()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    settle.steps()
    settle.validation()
    assert sizes == [("train", 5), ("train", 2)] * 2 + [("eval", 2)] * 2
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    assert torch.equal(torch.get_rng_state(), rng)
    assert all(p.grad is None for p in model.parameters())


class _Window:
    """A telemetry window that marks where each of the timer's epochs begins."""

    def __init__(self, events: list[tuple]):
        self.events = events

    def mark(self):
        self.events.append(("epoch",))

    def end_epoch(self):
        pass

    def stop(self):
        pass


@needs_torch
@pytest.mark.parametrize("task", ["fit", "predict"])
def test_the_step_engine_records_no_graph_in_a_timed_step(monkeypatch, task):
    """The paper suite's PyTorch step under ``compile``: the rehearsal between the first step and the timed ones
    makes each graph's second call, so the timed steps only replay. The first timed step was the recording."""
    import torch

    from bench.core.families.torch import TorchStepSettings
    from bench.core.stacks import get_stack
    from bench.models.engines.torch import steps as torch_steps
    from bench.models.workloads.job import Job
    from bench.results.cell import Cell, StepInputs
    from bench.run.scenarios.steps import step_metrics

    events: list[tuple] = []
    _compile_with(monkeypatch, events)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 2))
    x = torch.randn(3, 4)
    job = Job(model=model, optimizer="adam", call=(lambda m: m(x).square().mean()) if task == "fit" else
              (lambda m: m(x)))
    w = SimpleNamespace(model=SimpleNamespace(precision="float32", torch_job=lambda *a: job))
    cell = Cell(stack="pytorch", suite="paper", workload="bert", task=task, size="smoke", device="cpu",
                inputs=StepInputs(batch_size=3, steps=4))
    try:
        result = torch_steps.run(get_stack("pytorch"), w, cell, {}, TorchStepSettings(compile="reduce-overhead"),
                                 telemetry=_Window(events))
    finally:
        torch._dynamo.reset()
    later = _calls_after_the_first_epoch(events)
    assert len(later) == 4 * (2 if task == "fit" else 1)
    assert all(n >= 3 for _, _, n in later), later
    metrics = step_metrics(result.timer, 3, 4, None)
    assert metrics.graph_warmup_s > 0 and metrics.steps == 4

"""Step-timed tasks (fit / predict / generate) of the ``paper`` suite in plain PyTorch.

Out-of-the-box PyTorch, as the published method measures: eager mode (``compile`` is an opt-in
variant), the model in the dtype the source used, ``torch.inference_mode`` for predict and generate,
AdamW/Adam with Keras' default hyper-parameters, so both sides run the same update rule but for where epsilon goes:
torch adds it after the bias correction (torch/optim/adam.py@v2.13.0:544), Keras before it
(keras/src/optimizers/adam.py@v3.15.1:117, 132-137).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, cast

from bench.core.families.torch import TorchStepSettings
from bench.core.stacks import Stack
from bench.instruments.profile import rerun
from bench.instruments.timing import EpochTimer, time_calls
from bench.models.engines import StepResult, frameworks, math_mode, output_block, toolchain
from bench.models.engines.frameworks import make_barrier
from bench.models.engines.torch.settle import records_graphs, untouched
from bench.models.workloads import StepWorkload
from bench.models.workloads.job import Job, check_output
from bench.results.cell import Cell, StepInputs
from bench.results.schema import EffectiveSettings, Memory, Model


def _optimizer(torch, name: str | None, params):
    """Keras' defaults: lr 1e-3, epsilon 1e-7, AdamW weight decay 0.004."""
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-3, eps=1e-7, weight_decay=0.004)
    return torch.optim.Adam(params, lr=1e-3, eps=1e-7)


def _compiled(torch, job: Job, task: str, mode: str):
    """The module the step calls: eager, or ``torch.compile`` (generate: its forward, as HF documents)."""
    if mode == "none":
        return job.model
    kw = {} if mode == "default" else {"mode": mode}
    if task == "generate":
        job.model.forward = torch.compile(job.model.forward, **kw)
        return job.model
    return torch.compile(job.model, **kw)


def _step(torch, job: Job, task: str, step_model: Any) -> Callable[[], Any]:
    """One timed step of ``job`` on ``step_model`` (its model, compiled or not): for ``fit`` its loss, backward and
    an update of the trainable parameters by its optimizer (built here, before any step); otherwise its call
    under ``torch.inference_mode``. The step returns what the call returned."""
    call = cast(Callable[[Any], Any], job.call)  # every torch_job sets it
    if task == "fit":
        opt = _optimizer(torch, job.optimizer, [p for p in job.model.parameters() if p.requires_grad])

        def step():
            loss = call(step_model)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss
        return step

    def infer():
        with torch.inference_mode():
            return call(step_model)
    return infer


def _rehearsal(torch, job: Job, task: str, step_model: Any) -> Callable[[], None]:
    """The step once more, untimed, between the first step and the timed ones, on a GPU under a ``torch.compile``
    mode that records CUDA graphs (``settle.records_graphs``): CUDA graph trees record a graph at its second call
    (one graph per size of a dynamic graph: each length ``generate`` decodes at), which was the first timed step
    (``bench.models.engines.torch.settle``). For ``fit`` its forward and backward with no optimizer step,
    ``settle.untouched`` (random streams, buffers and gradients put back); otherwise the call under
    ``torch.inference_mode``."""
    call = cast(Callable[[Any], Any], job.call)

    def rehearse() -> None:
        with untouched(torch, job.model):
            if task == "fit":
                call(step_model).backward()
            else:
                with torch.inference_mode():
                    call(step_model)
    return rehearse


def run(stack: Stack, w: StepWorkload, cell: Cell, cfg: dict[str, Any], settings: TorchStepSettings,
        telemetry=None) -> StepResult:
    """Build ``w``'s PyTorch model for ``cell``'s task from ``cfg``, time its inputs' ``steps`` steps of
    ``batch_size`` (``StepInputs``) after the first on ``cell.device``, return the record blocks. On a GPU under a
    ``compile`` mode that records CUDA graphs the step is rehearsed once between the first and the timed ones
    (``_rehearsal``).

    ``settings``: ``bench.core.families.torch.TorchStepSettings`` (``compile``: none, default, reduce-overhead,
    max-autotune; ``tf32``).

    Raises:
        Unsupported: ``compile`` without torch.compile's toolchain (``toolchain.torch_compile_blocker``).
        RuntimeError: ``generate`` stopped before the fixed length.
    """
    import torch

    task, device, inputs = cell.task, cell.device, cell.inputs_as(StepInputs)
    batch, steps = inputs.batch_size, inputs.steps
    mode = settings.compile
    if mode != "none":
        toolchain.require_torch_compile(device, f"compile={mode}")
    effective = EffectiveSettings(torch_version=torch.__version__, compile=mode, steps=steps,
                                  precision=w.model.precision, **math_mode.set_tf32("torch", settings.tf32))
    torch.manual_seed(0)
    dev = torch.device("cuda" if device == "gpu" else "cpu")
    job = w.model.torch_job(task, cfg, batch, dev, dataclasses.asdict(settings))
    model = job.model
    model.train(task == "fit")
    step_model = _compiled(torch, job, task, mode)
    step = _step(torch, job, task, step_model)
    rehearse = _rehearsal(torch, job, task, step_model) if records_graphs(mode, device) else None
    barrier = make_barrier("torch", device)
    timer = EpochTimer(barrier, telemetry)
    try:
        result = time_calls(step, steps, timer, rehearse)
        barrier()
    finally:
        if telemetry:
            telemetry.stop()
    effective.generated_tokens = job.checked_tokens(result)
    effective = EffectiveSettings(**{**effective.model_dump(exclude_unset=True), **job.recorded})
    return StepResult(
        output=output_block(check_output(task, result)),
        settings=effective,
        timer=timer,
        model=Model(params_total=int(sum(p.numel() for p in model.parameters())),
                    params_trainable=int(sum(p.numel() for p in model.parameters() if p.requires_grad))),
        memory=Memory(device_peak_bytes=frameworks.device_peak_bytes("torch", device)),
        notes=list(job.notes),
        profile_run=rerun.calls(step),
    )

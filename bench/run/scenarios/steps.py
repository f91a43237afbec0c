"""Time steps on random inputs of the published shapes: the ``paper`` suite's ``StepWorkload``s (the Keras 3
benchmark's method), one cell per published batch size of a task."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.core import knobs
from bench.core.stacks import Stack
from bench.instruments.profile.rerun import ProfileRun
from bench.models import flops
from bench.models.engines import step_engine
from bench.models.workloads import WORKLOADS, StepWorkload
from bench.results import derived
from bench.results.cell import AnyInputs, Cell, StepInputs
from bench.results.schema import Data, Metrics, Record
from bench.run.scenarios import Scenario, effective_settings, finish_telemetry, telemetry_window
from bench.run.scenarios.epochs import EPOCHS

#: Largest batch of a step-timed workload at ``smoke`` size: CI runs every code path, not the published load.
SMOKE_MAX_BATCH = 2


class Steps(Scenario):
    """A ``StepWorkload``: ``steps`` timed steps after a first one, random inputs, every step between barriers."""

    name = "steps"
    label = "step"
    inputs_class = StepInputs

    def owns(self, w: Any) -> bool:
        return isinstance(w, StepWorkload)

    def defaults(self, w: StepWorkload, task: str, size: str) -> dict[str, Any]:
        """The task's first published batch size, the timed steps at ``size`` and the model's sequence length at
        ``size`` where ``task`` reads one (None: it reads none, ``PaperModel.reads_seq_len``)."""
        return {"batch_size": w.batch_sizes(task)[0], "steps": w.steps[size],
                "seq_len": w.model.config(size).get("seq_len") if w.model.reads_seq_len(task) else None}

    def inputs(self, w: StepWorkload, task: str, size: str, given: Mapping[str, Any]) -> AnyInputs:
        """As the base's, but a ``seq_len`` given to a task that reads none is not its input: its cell neither names
        it nor gets it in its model config (``run``), so its record never claims a length that did not take
        effect."""
        if not w.model.reads_seq_len(task):
            given = {**given, "seq_len": None}
        return super().inputs(w, task, size, given)

    def selection_problem(self, selected: Sequence[tuple[StepWorkload, str]], given: Mapping[str, Any],
                          size: str) -> str | None:
        """A ``seq_len`` given where no selected (workload, task) reads one (``seq_len_cells``), or longer than a
        selected model's learned positions at ``size`` (its config's ``max_len``: BERT's 512, 32 at smoke size), which
        its cell would only fail on."""
        seq_len = given.get("seq_len")
        if seq_len is None:
            return None
        reading = [w for w, t in selected if w.model.reads_seq_len(t)]
        if not reading:
            return (f"--seq-len applies to none of the selected cells: only to {seq_len_cells()}, whose inputs have "
                    "a sequence length")
        limits = {w.name: w.model.config(size).get("max_len") for w in reading}
        over = [f"{name}'s {limit}" for name, limit in limits.items() if limit and seq_len > limit]
        if over:
            return f"--seq-len {seq_len} is longer than the positions of {', '.join(over)} (max_len at size {size})"
        return None

    def same_as_default(self, w: StepWorkload, size: str, name: str, value: Any, default: Any) -> bool:
        """As the base's, but a batch size given is always named: the cell's variant (``bs<N>``) names it, and the
        id then leaves it out (``Cell.changed_inputs``)."""
        return name != "batch_size" and super().same_as_default(w, size, name, value, default)

    def cells(self, w: StepWorkload, task: str, size: str, given: Mapping[str, Any],
              variant: str) -> list[tuple[AnyInputs, str]]:
        """One cell per published batch size of ``task`` (variant ``bs<N>``, or ``bs<N>-<variant>`` for a
        non-default variant; capped at ``SMOKE_MAX_BATCH`` at smoke size), else per the one batch size given."""
        batch_size = given.get("batch_size")
        sizes = [batch_size] if batch_size else w.batch_sizes(task)
        if size == "smoke" and not batch_size:
            sizes = list(dict.fromkeys(min(b, SMOKE_MAX_BATCH) for b in sizes))
        return [(self.inputs(w, task, size, {**given, "batch_size": b}),
                 f"bs{b}" if variant == "default" else f"bs{b}-{variant}") for b in sizes]

    def sync_problem(self, sync: str, suite: str) -> str | None:
        if sync != "step":
            return f"suite {suite!r} times every step, as its source did; --sync applies to {EPOCHS.suites_text}"
        return None

    def data_problem(self, data: str, suite: str) -> str | None:
        if data != "auto":
            return (f"suite {suite!r} times random inputs (its source's step times do not depend on the data); "
                    f"--data applies to {EPOCHS.suites_text}")
        return None

    def unsupported(self, w: StepWorkload, stack: Stack) -> str | None:
        return w.model.unsupported(stack)

    def run(self, rec: Record, cell: Cell, stack: Stack, w: StepWorkload,
            samples_csv: Path | None) -> ProfileRun | None:
        """``steps`` timed steps after a first one on random inputs (the family's ``bench.models.engines.StepEngine``),
        with the model's FLOPs per step for MFU."""
        inputs = cell.inputs_as(StepInputs)
        batch, steps = inputs.batch_size, inputs.steps
        cfg = w.model.config(cell.size)
        if inputs.seq_len:
            cfg["seq_len"] = inputs.seq_len
        rec.data = Data(source="synthetic", reason="random inputs of the published shapes (the source's method)")
        with telemetry_window(cell.device, samples_csv) as tel:
            settings = knobs.settings_class(stack.family, "steps").from_dict(dict(cell.settings))
            out = step_engine(stack.family).run(stack, w, cell, cfg, settings, telemetry=tel)
        # the engine's typed blocks go into the record as they are (they write the fields the engine gave)
        rec.settings = effective_settings(settings, out.settings, model_config=w.model.task_config(cell.task, cfg))
        rec.metrics = step_metrics(out.timer, batch, steps, out.settings.generated_tokens)
        rec.model, rec.memory, rec.output = out.model, out.memory, out.output
        rec.notes += out.notes
        per_ex, method = flops.flops_per_example(w.name, cell.task, cell.size, cfg)
        rec.metrics.flops_per_step, rec.metrics.flops_method = per_ex * batch if per_ex else None, method
        finish_telemetry(rec, tel.summary(steps, batch * steps))
        return out.profile_run

    def resume_expected(self, rec: Record, cell: Cell) -> list[tuple[str, Any, Any]]:
        """The timed steps an ok record recorded."""
        steps = rec.metrics.steps if rec.metrics is not None else None
        return [] if steps is None else [("steps", steps, cell.inputs_as(StepInputs).steps)]

    def describe(self, w: StepWorkload) -> str:
        """Its cells, the tasks ``--seq-len`` sets (with the published length), its parameters and source."""
        cells = ", ".join(f"{t} {b}" for t, b in w.cells)
        seq = seq_len_tasks(w)
        seq_text = f"; --seq-len: {', '.join(seq)} (published {w.model.config('full')['seq_len']})" if seq else ""
        params = ", ".join(f"{k} {v:,}" for k, v in w.model.published_params.items()) or "n/a"
        return f"{cells}{seq_text}; params {params}; {w.source}"


def seq_len_tasks(w: StepWorkload) -> list[str]:
    """``w``'s tasks whose inputs have a sequence length (``PaperModel.reads_seq_len``), in its order."""
    return [t for t in w.tasks if w.model.reads_seq_len(t)]


def seq_len_cells() -> str:
    """The registered step-timed workloads and tasks that read a sequence length (``seq_len_tasks``), as one phrase:
    ``bert (fit, predict), gemma (fit)``."""
    found = {name: seq_len_tasks(w) for name, w in WORKLOADS.items() if isinstance(w, StepWorkload)}
    return ", ".join(f"{name} ({', '.join(tasks)})" for name, tasks in found.items() if tasks)


def step_metrics(timer: Any, batch: int, steps: int, generated_tokens: int | None) -> Metrics:
    """ms/step statistics over steps 2..N (the timer's second epoch), the first step apart, throughput, and the
    seconds of the compiled step's rehearsal (``graph_warmup_s``: ``bench.instruments.timing.time_calls``)."""
    s = timer.summary(batch, batch * steps)
    kept = {k: v for k, v in s.items() if k.startswith("ms_per_step_") or k == "graph_warmup_s"}
    out = Metrics(**kept, first_step_s=s["first_epoch_s"], steps=s["steps"], steady_s=s["steady_epoch_s"])
    derived.step_throughput(out, batch, generated_tokens)
    return out


STEPS = Steps()

"""Fit on a dataset for some epochs: the ``classic`` and ``tuning`` suites' ``Workload``s, timed by epoch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.core import knobs
from bench.core.stacks import Stack
from bench.instruments.profile.rerun import ProfileRun
from bench.models.engines import epoch_engine, missing_model
from bench.models.workloads import Workload, get_workload
from bench.results.cell import Cell
from bench.results.schema import Data, Record
from bench.run.scenarios import Scenario, effective_settings, finish_telemetry, telemetry_window


class Epochs(Scenario):
    """A ``Workload`` trained with ``fit`` for ``epochs`` epochs of its dataset; one cell per task, at the
    workload's batch size (or the one override)."""

    name = "epochs"
    suites_text = "the fit suites (classic, tuning)"
    overrides = frozenset({"epochs", "samples"})

    def owns(self, w: Any) -> bool:
        return isinstance(w, Workload)

    def default_batch(self, w: Workload, task: str, size: str) -> int:
        return w.batch_for(size)

    def batches(self, w: Workload, task: str, size: str, batch_size: int | None,
                variant: str) -> list[tuple[int | None, str]]:
        return [(self.batch_override(w, size, batch_size), variant)]

    def batch_override(self, w: Workload, size: str, batch_size: int | None) -> int | None:
        # an override equal to the workload's own batch at this size is the default cell (Cell.id)
        return None if batch_size == w.batch_for(size) else batch_size

    def unsupported(self, w: Workload, stack: Stack) -> str | None:
        return missing_model(stack.family, w)

    def run(self, rec: Record, cell: Cell, stack: Stack, w: Workload, samples_csv: Path | None) -> ProfileRun | None:
        """``fit`` on the workload's dataset for some epochs (the family's ``bench.models.engines.EpochEngine``)."""
        batch = rec.batch_size or 0
        epochs = cell.epochs or w.epochs[cell.size]
        ds = w.load_data(cell.size, cell.data, cell.samples)
        rec.data = Data.model_validate({**ds.record(), "requested": cell.data})
        if ds.source == "synthetic":
            rec.notes.append("data=synthetic: " + (ds.reason or ""))
        with telemetry_window(cell.device, samples_csv) as tel:
            settings = knobs.settings_class(stack.family, "epochs").from_dict(dict(cell.settings))
            out = epoch_engine(stack.family).fit(stack, w, ds, cell.device, epochs, batch, settings, telemetry=tel)
        # the engine's typed blocks go into the record as they are (they write the fields the engine gave)
        rec.settings = effective_settings(settings, out.settings)  # every knob, then what took effect
        rec.metrics, rec.history, rec.model, rec.memory = out.metrics, out.history, out.model, out.memory
        finish_telemetry(rec, tel.summary(out.metrics.steps_per_epoch, ds.n_train))
        return out.profile_run

    def resume_expected(self, rec: Record, cell: Cell, w: Workload) -> list[tuple[str, Any, Any]]:
        expected: list[tuple[str, Any, Any]] = []
        if rec.batch_size is not None:
            default = self.default_batch(w, cell.task, cell.size)
            expected.append(("batch_size", rec.batch_size, cell.batch_size or default))
        epoch_s = rec.metrics.epoch_s if rec.metrics is not None else None
        if isinstance(epoch_s, list):
            expected.append(("epochs", len(epoch_s), cell.epochs or w.epochs[cell.size]))
        return expected

    def describe(self, w: Workload) -> str:
        smoke = f" (smoke {w.smoke_batch_size})" if w.smoke_batch_size else ""
        aug = "; augmented" if w.augmentation else ""
        batch = f"{w.batch_size}{smoke}"
        return (f"tasks {','.join(w.tasks):<4} params {w.params:<9,} batch {batch:<13} "
                f"epochs {w.epochs['full']:<3} {w.optimizer.describe()}{aug}{model_variants(w)}; {w.source}")


def model_variants(w: Workload) -> str:
    """``; Keras variants: --set row_lstm=reshape``: the named variants of a workload's model knobs (``bench list``)."""
    sets = [f"--set {k}={v}" for k in w.keras_knobs for v in knobs.KNOBS["keras"][k] if v != knobs.DEFAULTS["keras"][k]]
    return f"; Keras variants: {', '.join(sets)}" if sets else ""


def fit_workload(name: str) -> Workload:
    """The registered workload ``name``, which must fit on a dataset (``bench fidelity`` times its fit loop).

    Raises:
        KeyError: unknown workload. ValueError: it is step-timed (the paper suite).
    """
    w = get_workload(name)
    if not isinstance(w, Workload):
        raise ValueError(f"{name} is step-timed (paper suite): fidelity times the fit loop of a classic workload")
    return w


EPOCHS = Epochs()

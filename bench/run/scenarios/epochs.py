"""Fit on a dataset for some epochs: the ``classic`` and ``tuning`` suites' ``Workload``s, timed by epoch."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.core import knobs
from bench.core.stacks import Stack
from bench.core.workloadnames import STEP_TIMED
from bench.instruments.profile.rerun import ProfileRun
from bench.models.engines import epoch_engine, missing_model
from bench.models.workloads import Workload, get_workload
from bench.results.cell import AnyInputs, Cell, EpochInputs
from bench.results.schema import Data, Record
from bench.run.scenarios import Scenario, effective_settings, finish_telemetry, telemetry_window


class Epochs(Scenario):
    """A ``Workload`` trained with ``fit`` for ``epochs`` epochs of its dataset; one cell per task, at the
    workload's batch size (or the one override)."""

    name = "epochs"
    label = "epoch"
    inputs_class = EpochInputs

    def owns(self, w: Any) -> bool:
        return isinstance(w, Workload)

    def defaults(self, w: Workload, task: str, size: str) -> dict[str, Any]:
        """The workload's batch (``Workload.batch_for``), epochs and training examples (None: all) at ``size``."""
        return {"batch_size": w.batch_for(size), "epochs": w.epochs[size], "samples": w.samples.get(size)}

    def same_as_default(self, w: Workload, size: str, name: str, value: Any, default: Any) -> bool:
        """As the base's, and a ``samples`` cap where the size trains on the whole dataset (None) that loads the
        whole dataset all the same (``Workload.whole_dataset``: at or above its training examples), so the same
        data is never a record of its own under another cell id."""
        if name == "samples" and default is None and w.whole_dataset(value):
            return True
        return super().same_as_default(w, size, name, value, default)

    def cells(self, w: Workload, task: str, size: str, given: Mapping[str, Any],
              variant: str) -> list[tuple[AnyInputs, str]]:
        """One cell of ``task``, at the batch given or the workload's own."""
        return [(self.inputs(w, task, size, given), variant)]

    def unsupported(self, w: Workload, stack: Stack) -> str | None:
        return missing_model(stack.family, w)

    def run(self, rec: Record, cell: Cell, stack: Stack, w: Workload, samples_csv: Path | None) -> ProfileRun | None:
        """``fit`` on the workload's dataset for some epochs (the family's ``bench.models.engines.EpochEngine``)."""
        inputs = cell.inputs_as(EpochInputs)
        ds = w.load_data(cell.size, inputs.data, inputs.samples)
        rec.data = Data.model_validate({**ds.record(), "requested": inputs.data})
        if ds.source == "synthetic":
            rec.notes.append("data=synthetic: " + (ds.reason or ""))
        with telemetry_window(cell.device, samples_csv) as tel:
            settings = knobs.settings_class(stack.family, "epochs").from_dict(dict(cell.settings))
            out = epoch_engine(stack.family).fit(stack, w, ds, cell, settings, telemetry=tel)
        # the engine's typed blocks go into the record as they are (they write the fields the engine gave)
        rec.settings = effective_settings(settings, out.settings)  # every knob, then what took effect
        rec.metrics, rec.history, rec.model, rec.memory = out.metrics, out.history, out.model, out.memory
        finish_telemetry(rec, tel.summary(out.metrics.steps_per_epoch, out.metrics.examples_per_epoch))
        return out.profile_run

    def resume_expected(self, rec: Record, cell: Cell) -> list[tuple[str, Any, Any]]:
        """The data policy asked for (a record of an older schema without it is taken as the cell's) and the
        epochs an ok record timed."""
        inputs = cell.inputs_as(EpochInputs)
        given = rec.data is not None and "requested" in rec.data.model_fields_set
        expected: list[tuple[str, Any, Any]] = [
            ("data.requested", rec.data.requested if given and rec.data else inputs.data, inputs.data)]
        epoch_s = rec.metrics.epoch_s if rec.metrics is not None else None
        if isinstance(epoch_s, list):
            expected.append(("epochs", len(epoch_s), inputs.epochs))
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
        raise ValueError(STEP_TIMED.format(name=name))
    return w


EPOCHS = Epochs()

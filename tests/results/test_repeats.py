"""A cell's record from its repeats (``bench.results.repeats.aggregate``): what makes the cell's numbers invalid is
kept from every repeat (rule ``any``), not repeat 1's alone, whose record the cell otherwise copies."""

from __future__ import annotations

from bench.results.repeats import BUSY_NOTE, THROTTLED_NOTE, aggregate
from bench.results.schema import HOST_PIDS, Record


def repeat(n: int, processes: int = 0, throttled: bool = False, seen_from: str = HOST_PIDS) -> Record:
    rec = Record.model_validate({
        "status": "ok", "repeat": n, "device": "gpu", "metrics": {"ms_per_step_mean": 10.0 + n},
        "telemetry": {"throttled": throttled, "throttle_reasons": ["HwThermalSlowdown"] if throttled else []},
        "gpu_before": {"processes": processes, "process_memory_bytes": processes * 2**20, "seen_from": seen_from}})
    if processes:
        rec.notes.append(f"{BUSY_NOTE} {processes} other compute process(es) on the GPU when the cell started")
    if throttled:
        rec.notes.append(f"{THROTTLED_NOTE} HwThermalSlowdown")
    return rec


def test_a_repeat_that_throttled_or_found_the_gpu_busy_flags_the_cell_with_its_note():
    """Three rounds, round 2 throttled and round 3 beside another process: the cell said throttled False and 0
    processes (repeat 1's), with no note, and the report's Method said the rules were kept."""
    cell = aggregate([repeat(1), repeat(2, throttled=True), repeat(3, processes=2)])
    assert cell.telemetry is not None and cell.telemetry.throttled is True
    assert cell.telemetry.throttle_reasons == ["HwThermalSlowdown"]
    assert cell.gpu_before is not None and cell.gpu_before["processes"] == 2
    assert [n.split(":")[0] for n in cell.notes] == ["GPU throttled during the timed window", "GPU busy"]
    quiet = aggregate([repeat(1), repeat(2)])
    assert quiet.telemetry is not None and quiet.telemetry.throttled is False
    assert quiet.gpu_before is not None and quiet.gpu_before["processes"] == 0 and quiet.notes == []


def test_a_count_that_saw_only_its_own_container_in_any_repeat_is_said_so():
    """A repeat whose process count saw only its container's PID namespace cannot keep "GPU busy" for the cell."""
    cell = aggregate([repeat(1), repeat(2, seen_from="container pid namespace")])
    assert cell.gpu_before is not None and cell.gpu_before["seen_from"] == "container pid namespace"


def test_a_metric_only_some_repeats_hold_is_null_with_a_note_never_repeat_ones():
    """Three ok repeats, the second without J/epoch (its NVML gave no energy): the cell's j_per_epoch, whose rule is
    the median across repeats, is null with a note saying 2 of 3 repeats hold it, and examples/J (derived from it)
    null too; ms/step, which every repeat holds, is their median. The old aggregate skipped the metric and left the
    value the cell copies from repeat 1 (100 J, 10 examples/J) under the median's name."""
    def energy(n: int, j: float | None) -> Record:
        return Record.model_validate({"status": "ok", "repeat": n, "batch_size": 32, "data": {"n_train": 1000},
                                      "metrics": {"ms_per_step_mean": 10.0 + n, "j_per_epoch": j,
                                                  "examples_per_j": 1000 / j if j else None}})

    cell = aggregate([energy(1, 100.0), energy(2, None), energy(3, 300.0)])
    assert cell.metrics is not None and cell.metrics.ms_per_step_mean == 12.0
    assert cell.metrics.j_per_epoch is None and cell.metrics.examples_per_j is None
    assert [n for n in cell.notes if "j_per_epoch" in n] == [
        "Not every repeat: metrics.j_per_epoch null: 2 of 3 repeats hold it, and its rule is the median across every "
        "repeat (the repeats' records hold theirs)"]
    every = aggregate([energy(1, 100.0), energy(2, 200.0), energy(3, 300.0)])
    assert every.metrics is not None and every.metrics.j_per_epoch == 200.0 and every.notes == []

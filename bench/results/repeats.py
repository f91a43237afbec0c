"""Independent repeats of a cell and the fixed rule that turns them into one record.

Rule (fixed in advance, no best-of-N): each repeat runs in its own process. The cell is ``ok`` only when every repeat is
``ok`` and all ran on one GPU (repeats on two GPUs, e.g. a spot VM preempted between rounds, are ``failed`` with the
GPUs named and no metrics: repeat 1's are no median); otherwise it takes the status and reason of its first repeat that
is not. Each field's rule is declared with it (``bench.results.schema``). For an ``ok`` cell every metric with rule
``median`` (``AGGREGATED``) is the median across repeats of that metric (so ``ms_per_step_p50`` is the median of the
within-run p50s; null, with a note, where only some repeats hold it), and ``repeats.<metric>`` keeps the values, their
median, min, max and coefficient of variation (sample std / mean), also for the ``derived`` metrics (``DERIVED``:
throughput, TFLOP/s, MFU, examples/J), which are then recomputed from the medians (``bench.results.derived``), never
carried over from a repeat. Fields with rule ``first`` (environment, settings, telemetry, history, the per-epoch list
``metrics.epoch_s``) come from repeat 1;
``process.gpu_s`` (rule ``sum``) is summed into ``repeats.gpu_s``; each repeat's process wall time and start and end
times are listed (``repeats.process_wall_s``, ``started_utc``, ``finished_utc``). The per-repeat records stay on disk
under ``<stack>/repeats/``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.results.derived import rederive
from bench.results.schema import HOST_PIDS, Metrics, Record, Repeats, Spread, aggregated, derived_metrics

#: Metrics taken as the median across repeats (declared with rule ``median``).
AGGREGATED = aggregated()
#: Metrics recomputed from the medians (declared with rule ``derived``); their per-repeat spread is kept too.
DERIVED = derived_metrics()
RULE = ("median across repeats per metric; throughput, TFLOP/s, MFU and examples/J recomputed from the medians; cell "
        "ok only if every repeat is ok; no best-of-N")


def spread(values: list[float]) -> dict[str, Any]:
    """values, median, min, max and cv (sample std / mean; None for fewer than two values or mean 0)."""
    if not values:
        return {"values": [], "median": None, "min": None, "max": None, "cv": None}
    a = np.asarray(values, dtype=np.float64)
    cv = float(a.std(ddof=1) / a.mean()) if len(a) > 1 and a.mean() != 0 else None
    return {"values": [float(v) for v in a], "median": float(np.median(a)), "min": float(a.min()),
            "max": float(a.max()), "cv": cv}


def gpu_uuids(records: list[Record]) -> list[str]:
    """The GPUs (NVML UUIDs, in repeat order, each once) the repeats ran on; empty on CPU or without NVML."""
    seen = [r.env.gpu.uuid if r.env is not None and r.env.gpu is not None else None for r in records]
    return list(dict.fromkeys(u for u in seen if u))


def aggregate(records: list[Record]) -> Record:
    """One cell record from the records of its repeats (ordered by repeat), following ``RULE``.

    Raises:
        ValueError: ``records`` is empty.
    """
    if not records:
        raise ValueError("no repeat records to aggregate")
    bad = [r for r in records if r.status != "ok"]
    out = (bad[0] if bad else records[0]).model_copy(deep=True)
    out.repeat = None
    gpus = gpu_uuids(records)
    spreads: dict[str, Any] = {}  # repeats.<metric>: Repeats' fields made from Metrics' rules, unseen by mypy
    if len(gpus) > 1:  # e.g. a spot VM preempted between rounds: the repeats are not one measurement
        out.status = "failed"
        out.reason = (f"its {len(records)} repeats ran on {len(gpus)} GPUs ({', '.join(gpus)}): not one "
                      "measurement; run the cell again on one GPU (bench run --force)")
        out.metrics = Metrics()  # repeat 1's timings are no cell's median (each repeat's stays in its record)
    elif bad:
        if len(records) > 1:
            out.reason = f"repeat {bad[0].repeat or 1} of {len(records)}: {bad[0].reason}"
    else:
        spreads = aggregate_metrics(out, records)
    block = Repeats(n=len(records), ok=len(records) - len(bad), rule=RULE, statuses=[r.status for r in records],
                    **spreads)
    if any(r.schedule for r in records):  # rounds: where each repeat ran, for the drift check
        block.schedule = [{k: (r.schedule or {}).get(k) for k in ("round", "position")} for r in records]
    walls = [r.process.wall_s if r.process is not None else None for r in records]
    block.process_wall_s = [w for w in walls if w is not None]
    block.gpu_s = sum((r.process.gpu_s if r.process is not None else None) or 0.0 for r in records)
    block.started_utc = [r.started_utc for r in records]  # the cell's own times are repeat 1's (rule first)
    block.finished_utc = [r.finished_utc for r in records]
    out.repeats = block
    carry_repeat_notes(out, records)
    flag_any_repeat(out, records)
    return out


def flag_any_repeat(out: Record, records: list[Record]) -> None:
    """The rule ``any`` for what makes a cell's numbers invalid, where the cell's record is otherwise repeat 1's: a
    repeat that shared the CPUs (``process.host_contended``), whose GPU throttled in its timed window
    (``telemetry.throttled``, with the reasons of every repeat) or started beside another process
    (``gpu_before``: the repeat with the most processes, and a ``seen_from`` other than the host's PID namespace
    where any repeat's count saw only its own container's). Before, round 2's throttling or busy GPU was dropped
    and the report said the rules were kept."""
    if out.process is not None:
        flags = [r.process.host_contended for r in records if r.process is not None]
        out.process.host_contended = any(flags) if any(f is not None for f in flags) else None
    if out.telemetry is not None:
        tels = [r.telemetry for r in records if r.telemetry is not None]
        if any(t.throttled is not None for t in tels):
            out.telemetry.throttled = any(bool(t.throttled) for t in tels)
            reasons = [x for t in tels for x in (t.throttle_reasons or [])]
            out.telemetry.throttle_reasons = list(dict.fromkeys(reasons)) or out.telemetry.throttle_reasons
    befores = [r.gpu_before for r in records if r.gpu_before]
    if out.gpu_before and befores:
        busiest = max(befores, key=lambda b: b.get("processes") or 0)
        seen = [b.get("seen_from") for b in befores]
        out.gpu_before = {**busiest, "seen_from": next((x for x in seen if x != HOST_PIDS), seen[0])}


def aggregate_metrics(out: Record, records: list[Record]) -> dict[str, Spread]:
    """An ok cell's metrics: each ``AGGREGATED`` one the median across ``records``; then the derived ones recomputed
    from the medians. Returns metric -> its spread across ``records`` (each ``AGGREGATED`` and ``DERIVED`` metric
    every repeat has), the ``Repeats`` block's ``repeats.<metric>``. An ``AGGREGATED`` metric some repeats hold and
    others not (one repeat's NVML gave no energy) has no median across the repeats: it is null, with a note
    (``PARTIAL_NOTE``), never repeat 1's value, which the cell's record copies."""
    spreads: dict[str, Spread] = {}
    for key in AGGREGATED + DERIVED:
        values = [getattr(r.metrics, key) if r.metrics is not None else None for r in records]
        if any(v is None for v in values):
            held = sum(v is not None for v in values)
            if held and key in AGGREGATED and out.metrics is not None:
                setattr(out.metrics, key, None)
                out.notes.append(f"{PARTIAL_NOTE} metrics.{key} null: {held} of {len(values)} repeats hold it, and "
                                 "its rule is the median across every repeat (the repeats' records hold theirs)")
            continue
        spreads[key] = Spread(**spread(values))
        if key in AGGREGATED and out.metrics is not None:
            setattr(out.metrics, key, spreads[key].median)  # a declared field, validated (``Block``)
    rederive(out)
    return spreads


#: How the note of a metric only some repeats hold starts (``aggregate_metrics``).
PARTIAL_NOTE = "Not every repeat:"
#: How the note of a repeat run again on this run's GPU starts (``bench.run.runfolder`` writes it; ``aggregate``
#: carries it from every repeat into the cell).
OTHER_GPU_NOTE = "GPU changed:"
#: How the note of a repeat that shared the host's CPUs starts (``bench.instruments.hostload.contention_note``;
#: ``aggregate`` carries it from every repeat into the cell).
CONTENDED_NOTE = "CPU contended:"
#: How the notes of a repeat whose GPU was busy as it started (``bench.instruments.gpu_state.busy_note``) or
#: throttled in its timed window (``bench.run.scenarios.finish_telemetry``) start: carried from every repeat too.
BUSY_NOTE, THROTTLED_NOTE = "GPU busy:", "GPU throttled during the timed window:"


def carry_repeat_notes(out: Record, records: list[Record]) -> None:
    """Put into the cell ``out`` every repeat's note that it was run again on this GPU (``OTHER_GPU_NOTE``), shared
    the CPUs (``CONTENDED_NOTE``), started on a busy GPU (``BUSY_NOTE``) or throttled (``THROTTLED_NOTE``), not only
    repeat 1's (whose ``notes`` the cell takes)."""
    notes = list(out.notes)
    for r in records:
        notes += [n for n in r.notes if n.startswith((OTHER_GPU_NOTE, CONTENDED_NOTE, BUSY_NOTE, THROTTLED_NOTE))
                  and n not in notes]
    out.notes = notes

"""The CSV's column order, from the declarations: ``LEADING`` columns, then declaration order."""

from __future__ import annotations

from bench.results.schema.blocks import Data, Metrics, Model, Repeats
from bench.results.schema.env import Telemetry
from bench.results.schema.introspect import col, declared_names, setting_col, spread_col
from bench.results.schema.record import Record

#: The columns that lead every CSV, in this order (declared fields; ``col`` checks every name).
LEADING: tuple[str, ...] = (
    col(Record, "stack"), col(Record, "suite"), col(Record, "workload"), col(Record, "task"), col(Record, "size"),
    col(Record, "variant"), col(Record, "device"), col(Record, "status"), col(Record, "reason"),
    col(Record, "batch_size"), col(Data, "source"), setting_col("sync"), col(Metrics, "ms_per_step_mean"),
    col(Metrics, "ms_per_step_p50"), col(Metrics, "ms_per_step_p90"), col(Metrics, "ms_per_step_std"),
    col(Metrics, "first_epoch_s"), col(Metrics, "steady_epoch_s"), col(Metrics, "samples_per_s"),
    col(Metrics, "total_train_s"), col(Metrics, "fit_call_s_per_epoch"), col(Metrics, "j_per_epoch"), col(Repeats, "n"),
    spread_col("ms_per_step_mean", "cv"), col(Telemetry, "gpu_util_pct", "mean"), col(Telemetry, "power_w", "mean"),
    col(Telemetry, "throttled"), col(Model, "params_total"), col(Record, "notes"))
#: Record fields the CSV leaves out.
SKIP_KEYS = ("traceback",)


def column_order(columns: list[str]) -> list[str]:
    """``columns`` ordered for the CSV: ``LEADING``, then the other declared fields in declaration order (knobs
    with the settings block), then every undeclared column (open mappings, spreads) alphabetically."""
    present = set(columns)
    declared = declared_names()
    lead = [c for c in LEADING if c in present]
    rest = [c for c in declared if c in present and c not in lead]
    known = set(lead) | set(rest)
    return lead + rest + sorted(c for c in columns if c not in known)

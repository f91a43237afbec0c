"""Merges every cell record under a directory into one tidy CSV (one row per cell).

Nested record blocks become dotted columns (``metrics.ms_per_step_p50``, ``env.gpu.name``); lists of
per-epoch values are kept as JSON text. A malformed or partial file is reported by name and skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.results.record import REPEATS_DIR, RecordError, read_record

#: Columns that lead every CSV, in this order; the rest follow alphabetically.
LEADING = ("stack", "suite", "workload", "task", "size", "variant", "device", "status", "reason",
           "batch_size", "data.source", "settings.sync", "metrics.ms_per_step_mean", "metrics.ms_per_step_p50",
           "metrics.ms_per_step_p90", "metrics.ms_per_step_std", "metrics.first_epoch_s",
           "metrics.steady_epoch_s", "metrics.samples_per_s", "metrics.total_train_s", "metrics.j_per_epoch",
           "repeats.n", "repeats.ms_per_step_mean.cv", "telemetry.gpu_util_pct.mean", "telemetry.power_w.mean",
           "telemetry.throttled", "model.params_total", "notes")
SKIP_KEYS = ("traceback",)


def flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten nested dicts into dotted keys; lists become JSON text."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if key in SKIP_KEYS:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        elif isinstance(value, list):
            out[name] = "; ".join(value) if key == "notes" else json.dumps(value)
        else:
            out[name] = value
    return out


def find_records(root: Path) -> list[Path]:
    """Every cell record under ``root``: not scratch files of running cells, not per-repeat records."""
    skip = (".work", REPEATS_DIR, "doctor")  # doctor/: preflight tables beside a cloud job's runs
    return sorted(p for p in Path(root).rglob("*.json") if not any(s in p.parts for s in skip))


def load_records(paths: Iterable[Path]) -> tuple[list[dict[str, Any]], list[tuple[Path, str]]]:
    """Valid records, and (path, reason) for each file that was skipped."""
    good, bad = [], []
    for p in paths:
        try:
            good.append(read_record(p))
        except RecordError as e:
            bad.append((p, str(e)))
    return good, bad


def to_frame(records: list[dict[str, Any]]):
    """A pandas DataFrame with one row per record and the leading columns first."""
    import pandas as pd

    df = pd.DataFrame([flatten(r) for r in records])
    lead = [c for c in LEADING if c in df.columns]
    return df[lead + sorted(c for c in df.columns if c not in lead)]


def pivot_ms_per_step(df):
    """ms/step (mean over steady steps) by (workload, task) x stack; non-ok cells show their status."""
    import pandas as pd

    cells = df.apply(lambda r: f"{r['metrics.ms_per_step_mean']:.2f}"
                     if r["status"] == "ok" and pd.notna(r.get("metrics.ms_per_step_mean"))
                     else r["status"], axis=1)
    table = df.assign(value=cells).pivot_table(index=["workload", "task"], columns="stack",
                                               values="value", aggfunc="first")
    return table.fillna("-")


def collect(root: Path, out_csv: Path) -> tuple[Any, list[tuple[Path, str]]]:
    """Write the CSV of every valid record under ``root``; returns (DataFrame, skipped files).

    Raises:
        FileNotFoundError: ``root`` does not exist.
        ValueError: no valid record was found.
    """
    if not Path(root).is_dir():
        raise FileNotFoundError(f"no such directory: {root}")
    records, bad = load_records(find_records(root))
    if not records:
        raise ValueError(f"no valid result record under {root}")
    df = to_frame(records)
    out_csv = Path(out_csv)
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_csv.with_name(f".{out_csv.name}.tmp")
    df.to_csv(tmp, index=False)
    tmp.replace(out_csv)
    return df, bad

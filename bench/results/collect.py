"""Merges every cell record under a directory into one tidy CSV (one row per cell), with the same rows as JSON
lines beside it (``bench.results.rows``).

Nested record blocks become dotted columns (``metrics.ms_per_step_p50``, ``env.gpu.name``); lists of
per-epoch values are JSON text in the CSV and JSON arrays in the JSON lines. The column order comes from the declared
schema (``bench.results.schema.column_order``). A malformed or partial file, or one that does not fit the schema, is
reported by name and skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.results.cell import inputs_of
from bench.results.record import REPEATS_DIR, RecordError, load_record, without_requested_settings
from bench.results.rows import write_rows
from bench.results.schema import LEADING, SKIP_KEYS, Record, col, column_order
from bench.results.schema import Metrics as M

__all__ = ["LEADING", "SKIP_KEYS", "collect", "csv_frame", "fill_repeat_times", "find_records", "flatten",
           "load_records", "pivot_ms_per_step", "to_frame"]


def flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten nested dicts into dotted keys; lists stay lists (``notes``: one text, joined by "; ")."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if key in SKIP_KEYS:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        elif isinstance(value, list):
            out[name] = "; ".join(value) if key == col(Record, "notes") else value
        else:
            out[name] = value
    return out


def find_records(root: Path) -> list[Path]:
    """Every cell record under ``root``: not scratch files of running cells, not per-repeat records."""
    skip = (".work", REPEATS_DIR, "doctor")  # doctor/: preflight tables beside a cloud job's runs
    return sorted(p for p in Path(root).rglob("*.json") if not any(s in p.parts for s in skip))


def load_records(paths: Iterable[Path]) -> tuple[list[Record], list[tuple[Path, str]]]:
    """Valid records (typed: ``bench.results.record.load_record``; an older record's requested knobs never held as
    settings in effect, ``without_requested_settings``), and (path, reason) for each file that was skipped."""
    good, bad = [], []
    for p in paths:
        try:
            good.append(without_requested_settings(fill_repeat_times(load_record(p), p)))
        except RecordError as e:
            bad.append((p, str(e)))
    return good, bad


def fill_repeat_times(rec: Record, path: Path) -> Record:
    """``rec`` (read from ``path``) with ``repeats.started_utc`` and ``finished_utc`` filled in from its repeats'
    records beside it (``<stack>/repeats/<cell_id>__r<k>.json``, ``bench.results.record.result_path``) where it is a
    cell of several repeats written before those fields and every repeat's record is there and valid; as it is
    otherwise (the cell's own times are repeat 1's: the report's span of a run needs every repeat's)."""
    block = rec.repeats
    if block is None or (block.n or 0) < 2 or block.started_utc is not None:
        return rec
    repeats = []
    for k in range(1, (block.n or 0) + 1):
        try:
            repeats.append(load_record(Path(path).parent / REPEATS_DIR / f"{rec.cell_id}__r{k}.json"))
        except RecordError:
            return rec
    block.started_utc = [r.started_utc for r in repeats]
    block.finished_utc = [r.finished_utc for r in repeats]
    return rec


def to_frame(records: list[Record]) -> Any:
    """A pandas DataFrame with one row per record (its JSON: the fields it holds, ``flatten``: list cells hold
    lists), its columns in the declared order (``column_order``)."""
    import pandas as pd

    df = pd.DataFrame([flatten(r.model_dump(exclude_unset=True)) for r in records])
    return df[column_order(list(df.columns))]


def csv_frame(df: Any) -> Any:
    """``df`` as the CSV holds it: each list cell as JSON text."""
    lists = [c for c in df.columns if df[c].map(lambda v: isinstance(v, list)).any()]
    return df.assign(**{c: df[c].map(lambda v: json.dumps(v) if isinstance(v, list) else v) for c in lists})


def pivot_ms_per_step(df: Any) -> Any:
    """ms/step (mean over steady steps) by (workload, task, variant) x stack, the variant with the inputs its cell id
    names (``inputs_of``: ``default, batch_size=64``), so that no cell is picked from several; non-ok cells show their
    status, an ok cell without the value ``n/a``."""
    import pandas as pd

    ms, status = col(M, "ms_per_step_mean"), col(Record, "status")
    variant, cell_id = col(Record, "variant"), col(Record, "cell_id")
    cells = df.apply(lambda r: r[status] if r[status] != "ok" else f"{r[ms]:.2f}" if pd.notna(r.get(ms)) else "n/a",
                     axis=1)
    inputs = df[cell_id].map(inputs_of) if cell_id in df.columns else pd.Series("", index=df.index)
    named = df[variant].astype(str) + inputs.map(lambda x: f", {x}" if x else "")
    table = df.assign(value=cells, **{variant: named}).pivot_table(
        index=[col(Record, "workload"), col(Record, "task"), variant], columns=col(Record, "stack"), values="value",
        aggfunc="first")
    return table.fillna("-")


def collect(root: Path, out_csv: Path) -> tuple[Any, list[tuple[Path, str]]]:
    """Write the CSV of every valid record under ``root``, and its rows as JSON lines beside it (same stem,
    ``.jsonl``); returns (DataFrame, its list cells holding lists; skipped files).

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
    rows = [{k: v for k, v in row.items() if _present(v)} for row in df.to_dict("records")]
    write_rows(csv_frame(df), rows, Path(out_csv))
    return df, bad


def _present(value: Any) -> bool:
    """Whether a frame cell holds a value (a list, or a scalar that is not NaN/None: a record without the column)."""
    import pandas as pd

    return isinstance(value, list) or not pd.isna(value)

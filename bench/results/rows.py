"""The collected rows on disk: ``RUN.csv`` for people and spreadsheets, ``RUN.jsonl`` beside it for code.

Both hold the same rows in the same order (one per cell record, ``bench.results.collect.flatten``). In the CSV a list
(``history.loss``, ``repeats.<metric>.values``, ``env.pins`` of older records) is JSON text in a cell; in the JSON
lines it is a JSON array. ``read_rows`` is the one place that reads them back: the CSV's columns and dtypes (what the
report and ``bench compare`` always read), each list cell taken from the JSON lines, or, for a run collected before
the JSON lines existed (only a CSV), parsed from the CSV's text here, once. Nothing else parses JSON out of a cell.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

__all__ = ["jsonl_path", "present", "read_rows", "write_rows"]


def present(value: Any) -> bool:
    """Whether a cell of the collected rows holds a value: not None, NaN, pandas' NA (whose truth value is
    ambiguous) or '' (a column a record lacks, as the CSV or a frame holds it)."""
    import pandas as pd

    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return False
    return not (isinstance(value, str) and value == "")


def jsonl_path(csv_path: Path) -> Path:
    """The JSON lines beside a collected CSV: same stem, ``.jsonl``."""
    return Path(csv_path).with_suffix(".jsonl")


def write_rows(df: Any, rows: list[dict[str, Any]], out_csv: Path) -> None:
    """Write ``df`` (the CSV's frame) to ``out_csv`` and ``rows`` (the same rows, lists kept as lists) as JSON lines
    beside it, each file atomically (a temporary file renamed over it)."""
    out_csv = Path(out_csv)
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_csv.with_name(f".{out_csv.name}.tmp")
    df.to_csv(tmp, index=False)
    tmp.replace(out_csv)
    lines = jsonl_path(out_csv)
    tmp = lines.with_name(f".{lines.name}.tmp")
    with open(tmp, "w") as f:
        for row in rows:
            f.write(json.dumps(row, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(lines)


def read_rows(csv_path: Path) -> Any:
    """The collected CSV as a DataFrame whose list cells hold Python lists (not JSON text).

    Raises:
        FileNotFoundError: the CSV does not exist. pandas' ParserError / EmptyDataError: it cannot be parsed.
    """
    import pandas as pd

    df = pd.read_csv(csv_path)
    rows = _json_lines(jsonl_path(csv_path), len(df))
    nested = _nested_columns(df, rows)
    if not nested:
        return df
    # a Series of objects: a column given as a list of lists would be taken as a 2-D array
    return df.assign(**{c: pd.Series(v, index=df.index, dtype=object) for c, v in nested.items()})


def _json_lines(path: Path, n: int) -> list[dict[str, Any]] | None:
    """The JSON lines beside the CSV, when they exist and hold its ``n`` rows (else None: the CSV alone)."""
    try:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return None
    return rows if len(rows) == n and all(isinstance(r, dict) for r in rows) else None


def _nested_columns(df: Any, rows: list[dict[str, Any]] | None) -> dict[str, list[Any]]:
    """Column -> its values, for every column of ``df`` that holds a list or an object: from ``rows`` (the JSON
    lines) when given, else parsed from the CSV's JSON text."""
    from pandas.api.types import is_numeric_dtype

    out: dict[str, list[Any]] = {}
    for name in df.columns:
        if rows is not None:
            values = [r.get(name) for r in rows]
            if any(isinstance(v, (list, dict)) for v in values):
                out[name] = [v if isinstance(v, (list, dict)) else df[name].iloc[i] for i, v in enumerate(values)]
        elif not is_numeric_dtype(df[name]):  # text: object, or pandas 3's str dtype
            values = [_parsed(v) for v in df[name]]
            if any(isinstance(v, (list, dict)) for v in values):
                out[name] = values
    return out


def _parsed(value: Any) -> Any:
    """A CSV cell's list or object, from its JSON text; any other value as it is."""
    if not isinstance(value, str) or value[:1] not in "[{":
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value

"""``bench compare A.csv B.csv``: per-cell ratios B/A with a significance test across repeats.

Cells are matched on (stack, suite, workload, task, size, variant, device) and the inputs their id names
(``bench.results.cell.inputs_of``: a batch-64 cell never matches the default one). For each matched ``ok``
cell: the ratio of the aggregated metric (median across repeats), and a two-sided Mann-Whitney U test
(scipy, exact for small samples) on the per-repeat values. A change is flagged only when p < alpha
AND the relative change exceeds ``threshold``. With few repeats the smallest attainable p may not go
below alpha (3 vs 3 repeats: p >= 0.1); such rows say ``underpowered`` instead of guessing.
"""

from __future__ import annotations

import json
import math
from typing import Any

from bench.results.cell import inputs_of
from bench.results.schema import Metrics, Record, col, spread_col

KEY = [col(Record, k) for k in ("stack", "suite", "workload", "task", "size", "variant", "device")]
STATUS = col(Record, "status")
CELL_ID = col(Record, "cell_id")
INPUTS = "inputs"  # not a record field: the input suffix of cell_id, a matching key beside KEY


def metric_col(metric: str) -> str:
    """``metrics.<metric>`` for a declared metric.

    Raises:
        ValueError: ``metric`` is not a declared field of ``bench.results.schema.Metrics``.
    """
    try:
        return col(Metrics, metric)
    except KeyError as e:
        raise ValueError(f"unknown metric {metric!r}: {e.args[0]}") from None


def repeat_values(row, metric: str) -> list[float]:
    """Per-repeat values of ``metric`` from a CSV row (the ``repeats.<metric>.values`` JSON column);
    falls back to the single aggregated value."""
    try:
        text = row.get(spread_col(metric, "values"))
    except KeyError:  # a metric without a spread across repeats: its one value
        text = None
    if isinstance(text, str) and text.startswith("["):
        return [float(v) for v in json.loads(text)]
    value = row.get(metric_col(metric))
    return [] if value is None or (isinstance(value, float) and math.isnan(value)) else [float(value)]


def min_attainable_p(n1: int, n2: int) -> float:
    """Smallest two-sided exact Mann-Whitney p-value possible with samples of n1 and n2 (no ties)."""
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def test_pair(a: list[float], b: list[float], alpha: float, threshold: float) -> dict[str, Any]:
    """Ratio of medians b/a, Mann-Whitney p and a verdict: higher | lower | noise | underpowered."""
    import numpy as np
    from scipy.stats import mannwhitneyu

    ratio = float(np.median(b) / np.median(a)) if a and b and np.median(a) else None
    out: dict[str, Any] = {"n_a": len(a), "n_b": len(b), "ratio": ratio, "p_value": None,
                           "ranges_overlap": None, "verdict": "noise"}
    if ratio is None:
        out["verdict"] = "n/a"
        return out
    out["ranges_overlap"] = not (max(a) < min(b) or max(b) < min(a))
    if len(a) < 2 or len(b) < 2 or min_attainable_p(len(a), len(b)) >= alpha:
        out["verdict"] = "underpowered"
        return out
    p = float(mannwhitneyu(a, b, alternative="two-sided", method="auto").pvalue)
    out["p_value"] = p
    if p < alpha and abs(ratio - 1.0) > threshold:
        out["verdict"] = "higher" if ratio > 1 else "lower"
    return out


def with_inputs(df):
    """``df`` with an ``inputs`` column: the input suffix of each row's cell_id (``""`` without a cell_id column)."""
    return df.assign(**{INPUTS: df[CELL_ID].map(inputs_of) if CELL_ID in df.columns else ""})


def compare(df_a, df_b, metric: str = "ms_per_step_mean", alpha: float = 0.05, threshold: float = 0.02):
    """A DataFrame with one row per cell present in both runs (KEY columns, a/b medians, ratio, p, verdict).

    Raises:
        ValueError: an undeclared metric, a CSV lacks the key columns or the metric, holds a cell twice, or no cell
            matches.
    """
    import pandas as pd

    column = metric_col(metric)
    for name, df in (("A", df_a), ("B", df_b)):
        missing = [c for c in [*KEY, column] if c not in df.columns]
        if missing:
            raise ValueError(f"CSV {name} lacks columns: {', '.join(missing)}")
    a_ok, b_ok = (with_inputs(df[df[STATUS] == "ok"]).set_index([*KEY, INPUTS]) for df in (df_a, df_b))
    for name, ok in (("A", a_ok), ("B", b_ok)):
        twice = ok.index[ok.index.duplicated()].unique()
        if len(twice):  # e.g. a run whose cells ran on two GPUs: which row to compare would be a guess
            example = " ".join(map(str, twice[0]))
            raise ValueError(f"CSV {name} has several ok rows for {len(twice)} cell(s), e.g. {example} (rows from "
                             "several GPUs?): compare CSVs of one GPU each")
    common = a_ok.index.intersection(b_ok.index)
    if len(common) == 0:
        raise ValueError("no ok cell appears in both CSVs (matched on " + ", ".join([*KEY, INPUTS]) + ")")
    rows = []
    for key in common:
        ra, rb = a_ok.loc[key], b_ok.loc[key]
        ra = ra.iloc[0] if getattr(ra, "ndim", 1) > 1 else ra
        rb = rb.iloc[0] if getattr(rb, "ndim", 1) > 1 else rb
        va, vb = repeat_values(ra, metric), repeat_values(rb, metric)
        res = test_pair(va, vb, alpha, threshold)
        rows.append({**dict(zip([*KEY, INPUTS], key, strict=True)), f"a_{metric}": ra[column],
                     f"b_{metric}": rb[column], **res})
    return pd.DataFrame(rows)


"""``bench compare A.csv B.csv``: per-cell ratios B/A with a confidence interval and a significance test across
repeats; ``ratio_stats`` is the one statistic behind it and the report's Versions and Keras-overhead sections.

Cells are matched on (stack, suite, workload, task, size, variant, device) and the inputs their id names
(``bench.results.cell.inputs_of``: a batch-64 cell never matches the default one). For each matched ``ok``
cell: the ratio of the medians across repeats, its bootstrap confidence interval and a two-sided exact
Mann-Whitney U test (scipy) on the per-repeat values; ``RULE`` says when that is a change. With few repeats
the smallest attainable p may not go below alpha (3 vs 3 repeats: p >= 0.1); such rows say ``underpowered``
instead of guessing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.results.cell import inputs_of
from bench.results.differs import differences, knobs_between, unknown_between
from bench.results.schema import Metrics, Record, col, spread_col

KEY = [col(Record, k) for k in ("stack", "suite", "workload", "task", "size", "variant", "device")]
STATUS = col(Record, "status")
REASON = col(Record, "reason")
CELL_ID = col(Record, "cell_id")
INPUTS = "inputs"  # not a record field: the input suffix of cell_id, a matching key beside KEY


class NoCommonCell(ValueError):
    """``compare`` found no cell ok in both CSVs: ``not_compared`` then says why, cell by cell."""


def metric_col(metric: str) -> str:
    """``metrics.<metric>`` for a declared metric.

    Raises:
        ValueError: ``metric`` is not a declared field of ``bench.results.schema.Metrics``.
    """
    try:
        return col(Metrics, metric)
    except KeyError as e:
        raise ValueError(f"unknown metric {metric!r}: {e.args[0]}") from None


#: Schema 3's metric -> the schema 4 metrics it was split into (bench/results/schema/declare.py, SCHEMA_VERSION):
#: ``fit_s_per_epoch`` meant one of them or the other depending on the code that wrote it, so a run holding only one
#: side is refused with the reason, never compared as if they were one quantity.
SUPERSEDED = {"fit_s_per_epoch": ("fit_call_s_per_epoch", "fit_epoch_s_mean")}


def missing_metric_hint(metric: str) -> str:
    """Why a CSV may lack ``metric`` when it is one side of a ``SUPERSEDED`` split (empty otherwise)."""
    if metric in SUPERSEDED:
        return (f" (metrics.{metric} is written by schema 3 and older only; newer runs hold "
                f"{' and '.join(SUPERSEDED[metric])}: see bench fields)")
    old = [k for k, new in SUPERSEDED.items() if metric in new]
    return (f" (a run of schema 3 or older holds metrics.{old[0]} instead, whose meaning differs: see bench fields)"
            if old else "")


def repeat_values(row, metric: str) -> list[float]:
    """Per-repeat values of ``metric`` from a collected row (the ``repeats.<metric>.values`` list, as
    ``bench.results.rows.read_rows`` reads it, a JSON null read as NaN: no time); falls back to the single
    aggregated value.

    Raises:
        ValueError: a value of the list is not a number (the column and the value named).
    """
    try:
        values = row.get(spread_col(metric, "values"))
    except KeyError:  # a metric without a spread across repeats: its one value
        values = None
    if isinstance(values, list):
        try:  # a null was float(None): a TypeError traceback
            return [math.nan if v is None else float(v) for v in values]
        except (TypeError, ValueError):
            raise ValueError(f"{spread_col(metric, 'values')} holds a value that is not a number: {values!r}") from None
    value = row.get(metric_col(metric))
    return [] if value is None or (isinstance(value, float) and math.isnan(value)) else [float(value)]


def min_attainable_p(n1: int, n2: int) -> float:
    """Smallest two-sided exact Mann-Whitney p-value possible with samples of n1 and n2 (no ties)."""
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


#: Significance level of the Mann-Whitney test.
ALPHA = 0.05
#: Smallest relative change that counts, and why (the report prints both).
THRESHOLD = 0.02
THRESHOLD_REASON = ("a smaller change of ms/step is within what one GPU varies from run to run (boost clocks, "
                    "temperature, the drift the Method section checks) and no reason to pick one version")
#: The confidence interval: level, scipy.stats.bootstrap method, resamples and seed (fixed: a report is reproducible).
#: "percentile", not scipy's default "BCa": BCa's bias correction and jackknife acceleration are undefined when
#: the resampled medians all fall on one side of the observed one or the jackknife values are equal, which is
#: common at n = 3..10 repeats with constant or tied values (scipy 1.17 returns NaN with a DegenerateDataWarning),
#: while the percentile interval (quantiles of the resampled ratios) is always defined. At such n it is too
#: narrow rather than too wide, which is why a change must also pass the exact test (``RULE``).
CI_LEVEL = 0.95
CI_METHOD = "percentile"
N_RESAMPLES = 9999
BOOTSTRAP_SEED = 0
#: When a ratio counts as a change, in words (the report prints it; ``ratio_stats`` applies it).
RULE = ("a change counts when the two-sided Mann-Whitney p < {alpha:g}, the {level:.0%} confidence interval of the "
        "ratio excludes 1 and |ratio - 1| >= {threshold:.0%} ({reason}); fewer than 2 repeats a side, or a smallest "
        "attainable p >= {alpha:g} (3 vs 3 repeats: 0.1; 4 vs 4: 0.029), is too few repeats for a verdict")
#: A time metric's verdict (lower is faster) in the report's words.
TIME_VERDICT = {"higher": "slower", "lower": "faster", "noise": "no detectable change",
                "underpowered": "too few repeats", "n/a": "n/a"}


def rule_tests(alpha: float = ALPHA, threshold: float = THRESHOLD) -> dict[str, Callable[[float], bool]]:
    """What ``RULE`` asks of each statistic for a change, by ``test_pair``'s column: ``ratio`` (|ratio - 1| >=
    ``threshold``), ``ci_low`` (> 1) or ``ci_high`` (< 1), ``p_value`` (< ``alpha``). ``ratio_stats`` decides by
    them, and the tables print each number with the digits that keep it on its side of them
    (``bench.results.report.common.fmt_beside``)."""
    return {"ratio": lambda r: abs(r - 1.0) >= threshold, "ci_low": lambda v: v > 1.0,
            "ci_high": lambda v: v < 1.0, "p_value": lambda p: p < alpha}


def rule_text(alpha: float = ALPHA, threshold: float = THRESHOLD, level: float = CI_LEVEL) -> str:
    """``RULE`` with its numbers filled in."""
    return RULE.format(alpha=alpha, threshold=threshold, level=level, reason=THRESHOLD_REASON)


@dataclass(frozen=True)
class PairStats:
    """Candidate b against base a: ``ratio_stats``' result.

    Attributes:
        n_a, n_b: repeats on each side.
        ratio: median(b) / median(a); None when a side is empty or holds a value that is not a positive finite number.
        ci_low, ci_high: the ratio's ``CI_LEVEL`` bootstrap interval (None with fewer than 2 repeats a side).
        p_value: two-sided Mann-Whitney p (None with fewer than 2 repeats a side).
        p_method: ``exact`` (no ties: the exact null distribution of U), ``permutation`` (ties: scipy's permutation
            test, exact whenever the partitions number at most ``N_RESAMPLES``) or None.
        verdict: ``higher`` | ``lower`` | ``noise`` | ``underpowered`` | ``n/a`` (``RULE``).
        reason: why the verdict is ``n/a`` ('' otherwise): a side empty, or a value that is not a
            positive finite number (NaN, infinite, 0 or negative: no time, so no ratio of times).
    """

    n_a: int
    n_b: int
    ratio: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    p_method: str | None = None
    verdict: str = "n/a"
    reason: str = ""

    @property
    def time_verdict(self) -> str:
        """The verdict for a time (ms/step: lower is faster): faster | slower | no detectable change |
        too few repeats | n/a."""
        return TIME_VERDICT[self.verdict]

    @property
    def time_verdict_text(self) -> str:
        """``time_verdict`` with the reason where there is no ratio (``n/a: a value is not a positive finite number
        (nan)``): the report's tables say why, as ``bench compare``'s ``reason`` column does."""
        return f"{self.time_verdict}: {self.reason}" if self.reason else self.time_verdict


def bootstrap_ci(a: list[float], b: list[float], level: float = CI_LEVEL, n_resamples: int = N_RESAMPLES,
                 seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """``level`` interval of median(b) / median(a) by ``scipy.stats.bootstrap``: each sample resampled with
    replacement independently of the other (``paired=False``), ``CI_METHOD``, ``n_resamples`` draws from
    ``numpy.random.default_rng(seed)``.

    Raises:
        ValueError: a sample has fewer than 2 values.
    """
    import numpy as np
    from scipy.stats import bootstrap

    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"a bootstrap interval needs 2 values a side, got {len(a)} and {len(b)}")

    def ratio(x, y, axis):
        with np.errstate(divide="ignore", invalid="ignore"):  # a resample with median 0: inf, not a warning
            return np.median(y, axis=axis) / np.median(x, axis=axis)

    res = bootstrap((np.asarray(a, float), np.asarray(b, float)), ratio, paired=False, vectorized=True,
                    n_resamples=n_resamples, confidence_level=level, method=CI_METHOD,
                    rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def median_ci(values: list[float], level: float = CI_LEVEL, n_resamples: int = N_RESAMPLES,
              seed: int = BOOTSTRAP_SEED) -> tuple[float, float] | None:
    """``level`` interval of the median of one cell's per-repeat ``values`` (e.g. ms/step, the metric being their
    median) by ``scipy.stats.bootstrap`` with the settings of ``bootstrap_ci`` (``CI_METHOD``, ``n_resamples``
    draws, ``numpy.random.default_rng(seed)``): at 3-10 repeats the percentile interval is too narrow rather than
    too wide. None with fewer than 2 values: one repeat has no spread across repeats."""
    import numpy as np
    from scipy.stats import bootstrap

    if len(values) < 2:
        return None
    res = bootstrap((np.asarray(values, float),), np.median, vectorized=True, n_resamples=n_resamples,
                    confidence_level=level, method=CI_METHOD, rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def mann_whitney_p(a: list[float], b: list[float], seed: int = BOOTSTRAP_SEED) -> tuple[float, str]:
    """Two-sided Mann-Whitney U p of a against b and how it was computed: ``exact`` without ties, else
    ``permutation`` (scipy's ``exact`` ignores ties and its docs recommend a permutation test then:
    scipy/stats/_mannwhitneyu.py@v1.17.1, Notes; it enumerates every partition when they number at most
    ``N_RESAMPLES``, up to 7 vs 7 repeats, else draws ``N_RESAMPLES`` seeded ones)."""
    import numpy as np
    from scipy.stats import PermutationMethod, mannwhitneyu

    if len(set(a) | set(b)) == len(a) + len(b):
        return float(mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue), "exact"
    method = PermutationMethod(n_resamples=N_RESAMPLES, rng=np.random.default_rng(seed))
    return float(mannwhitneyu(a, b, alternative="two-sided", method=method).pvalue), "permutation"


def ratio_stats(a: list[float], b: list[float], alpha: float = ALPHA, threshold: float = THRESHOLD,
                level: float = CI_LEVEL) -> PairStats:
    """Candidate ``b`` against base ``a`` (per-repeat values of one metric, e.g. ms/step): ratio of medians b/a,
    its bootstrap interval (``bootstrap_ci``), the Mann-Whitney p (``mann_whitney_p``) and the verdict by
    ``RULE``: ``higher`` / ``lower`` (a change), ``noise`` (none detected), ``underpowered`` (too few repeats),
    ``n/a`` (no ratio: a side empty, or a value that is not a positive finite number, ``PairStats.reason``)."""
    import numpy as np

    n_a, n_b = len(a), len(b)
    if not a or not b:
        return PairStats(n_a, n_b, None, reason="no value on a side")
    bad = [v for v in (*a, *b) if not (math.isfinite(v) and v > 0)]
    if bad:  # a NaN repeat made every statistic NaN and read "no detectable change"; a negative one, "faster"
        return PairStats(n_a, n_b, None, reason=f"a value is not a positive finite number ({bad[0]!r})")
    ratio = float(np.median(b) / np.median(a))
    if n_a < 2 or n_b < 2:
        return PairStats(n_a, n_b, ratio, verdict="underpowered")
    low, high = bootstrap_ci(a, b, level)
    p, how = mann_whitney_p(a, b)
    rule = rule_tests(alpha, threshold)
    if min_attainable_p(n_a, n_b) >= alpha:
        verdict = "underpowered"
    elif rule["p_value"](p) and (rule["ci_low"](low) or rule["ci_high"](high)) and rule["ratio"](ratio):
        verdict = "higher" if ratio > 1 else "lower"
    else:
        verdict = "noise"
    return PairStats(n_a, n_b, ratio, low, high, p, how, verdict)


def test_pair(a: list[float], b: list[float], alpha: float, threshold: float) -> dict[str, Any]:
    """``ratio_stats`` as ``compare``'s columns: n_a, n_b, ratio, ci_low, ci_high, p_value, p_method,
    ranges_overlap (the two samples' ranges overlap), verdict, reason (why there is no verdict:
    ``PairStats.reason``)."""
    res = ratio_stats(a, b, alpha, threshold)
    overlap = None if res.ratio is None else not (max(a) < min(b) or max(b) < min(a))
    return {"n_a": res.n_a, "n_b": res.n_b, "ratio": res.ratio, "ci_low": res.ci_low, "ci_high": res.ci_high,
            "p_value": res.p_value, "p_method": res.p_method, "ranges_overlap": overlap, "verdict": res.verdict,
            "reason": res.reason}


def with_inputs(df):
    """``df`` with an ``inputs`` column: the input suffix of each row's cell_id (``""`` without a cell_id column)."""
    # a copy first: a CSV of a few hundred columns, filtered, is fragmented, and assign would warn (PerformanceWarning)
    return df.copy().assign(**{INPUTS: df[CELL_ID].map(inputs_of) if CELL_ID in df.columns else ""})


VARIANT = col(Record, "variant")


def pair_variants(df_a, df_b, variant_a: str, variant_b: str):
    """The rows of variant ``variant_a`` in ``df_a`` and of ``variant_b`` in ``df_b``, both relabelled
    ``"<variant_a> -> <variant_b>"`` so that ``compare`` matches a variant's cells with the other's (a knob's
    effect: ``default`` against ``row_lstm-reshape``, from one CSV or two).

    Raises:
        ValueError: a side has no row of its variant (the variants it has are named).
    """
    label = f"{variant_a} -> {variant_b}"
    out = []
    for name, df, variant in (("A", df_a, variant_a), ("B", df_b, variant_b)):
        if VARIANT not in df.columns:
            raise ValueError(f"CSV {name} lacks column {VARIANT}")
        rows = df[df[VARIANT] == variant]
        if rows.empty:
            have = ", ".join(sorted(map(str, df[VARIANT].dropna().unique())))
            raise ValueError(f"CSV {name} has no row of variant {variant!r} (it has: {have})")
        out.append(rows.assign(**{VARIANT: label}))
    return out[0], out[1]


def compare(df_a, df_b, metric: str = "ms_per_step_mean", alpha: float = ALPHA, threshold: float = THRESHOLD,
            variants: tuple[str, str] | None = None):
    """A DataFrame with one row per cell present in both runs (KEY columns, a/b medians, ``test_pair``'s columns, then
    ``differs``: the machine or settings in effect that differ between the two rows, ``differences``; ``unknown``:
    what could not be compared, a row naming no machine model or not recording a setting in effect the other row
    records, ``unknown_between``).

    ``variants``: (variant of A, variant of B) to match across variants (``pair_variants``), e.g. a knob's
    effect within one run; None matches equal variants.

    Raises:
        ValueError: an undeclared metric, a CSV lacks the key columns, the status or the metric, holds a cell twice,
            or no cell matches (``NoCommonCell``); a variant of ``variants`` absent from its CSV.
    """
    import pandas as pd

    column = metric_col(metric)
    for name, df in (("A", df_a), ("B", df_b)):
        missing = [c for c in [*KEY, STATUS, column] if c not in df.columns]
        if missing:
            raise ValueError(f"CSV {name} lacks columns: {', '.join(missing)}"
                             + (missing_metric_hint(metric) if column in missing else ""))
    if variants:
        df_a, df_b = pair_variants(df_a, df_b, *variants)
    a_ok, b_ok = (with_inputs(df[df[STATUS] == "ok"]).set_index([*KEY, INPUTS]) for df in (df_a, df_b))
    for name, ok in (("A", a_ok), ("B", b_ok)):
        twice = ok.index[ok.index.duplicated()].unique()
        if len(twice):  # e.g. a run whose cells ran on two GPUs: which row to compare would be a guess
            example = " ".join(map(str, twice[0]))
            raise ValueError(f"CSV {name} has several ok rows for {len(twice)} cell(s), e.g. {example} (rows from "
                             "several GPUs?): compare CSVs of one GPU each")
    common = a_ok.index.intersection(b_ok.index)
    if len(common) == 0:
        raise NoCommonCell("no ok cell appears in both CSVs (matched on " + ", ".join([*KEY, INPUTS]) + ")")
    rows = []
    for key in common:
        ra, rb = a_ok.loc[key], b_ok.loc[key]
        ra = ra.iloc[0] if getattr(ra, "ndim", 1) > 1 else ra
        rb = rb.iloc[0] if getattr(rb, "ndim", 1) > 1 else rb
        va, vb = repeat_values(ra, metric), repeat_values(rb, metric)
        res = test_pair(va, vb, alpha, threshold)
        keyed = dict(zip([*KEY, INPUTS], key, strict=True))
        knobs = knobs_between(ra, rb) if variants else set()
        rows.append({**keyed, f"a_{metric}": ra[column], f"b_{metric}": rb[column], **res,
                     "differs": differences(ra, rb, keyed, knobs), "unknown": unknown_between(ra, rb, keyed, knobs)})
    return pd.DataFrame(rows)


def cell_statuses(df, keys: list[str]) -> dict[tuple[Any, ...], tuple[list[str], str]]:
    """Each cell of ``df`` (its rows grouped by ``keys``) -> (its rows' distinct statuses in row order, the first
    reason recorded by a row that is not ``ok``, '' when none is). The one reading of a cell's statuses behind
    ``not_compared`` and the report's Versions and Keras-overhead sections (``versions.not_ok_cells``).

    A key column a CSV lacks, or a missing value in one (NaN, ''), reads as '': NaN equals nothing, so a cell keyed
    by a NaN was a different key in each CSV (listed twice by ``not_compared``, once per side, though compared)."""
    rows = with_inputs(df)
    rows = rows.assign(**{k: rows[k].fillna("") if k in rows.columns else "" for k in keys})
    out: dict[tuple[Any, ...], tuple[list[str], str]] = {}
    for key, g in rows.groupby(keys, sort=False):
        reasons = list(g[g[STATUS] != "ok"][REASON].dropna()) if REASON in g.columns else []
        out[key] = (list(dict.fromkeys(map(str, g[STATUS]))), str(reasons[0]) if reasons else "")
    return out


def not_compared(df_a, df_b, variants: tuple[str, str] | None = None):
    """The cells ``compare`` leaves out, which its count of cells compared does not show: a cell not ``ok`` on a
    side (failed, unsupported, ...: a cell that broke in B is the change that matters most) or in one CSV only.

    Returns a DataFrame: ``KEY``, inputs, ``status_a``, ``status_b`` (the cell's statuses there; ``absent`` where the
    CSV has no row of it) and ``reason`` (the first not-ok row's ``reason``, B's first), in A's order then B's.
    """
    import pandas as pd

    if variants:
        df_a, df_b = pair_variants(df_a, df_b, *variants)
    a, b = (cell_statuses(df, [*KEY, INPUTS]) for df in (df_a, df_b))
    rows = []
    for key in dict.fromkeys([*a, *b]):
        (sa, why_a), (sb, why_b) = a.get(key, (["absent"], "")), b.get(key, (["absent"], ""))
        if "ok" not in sa or "ok" not in sb:  # an ok row on both sides: compared
            rows.append({**dict(zip([*KEY, INPUTS], key, strict=True)), "status_a": ", ".join(sa),
                         "status_b": ", ".join(sb), "reason": why_b or why_a})
    return pd.DataFrame(rows, columns=[*KEY, INPUTS, "status_a", "status_b", "reason"])

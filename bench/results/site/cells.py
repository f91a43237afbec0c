"""A run's cells as the results site lists them: one row per collected row (a cell record), its numbers formatted as
the report formats them (``bench.results.report.common.fmt``), and the record itself, grouped by block, for the
panel that a click on the row opens."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from bench.results.cell import inputs_of
from bench.results.compare import repeat_values
from bench.results.report.classic import s_per_epoch_text
from bench.results.report.common import _num, fmt
from bench.results.schema import Metrics, Record, col

MS = col(Metrics, "ms_per_step_mean")
#: The record panel's blocks in this order (the rest after them, by name); top-level fields are the ``cell`` block.
BLOCK_ORDER = ("cell", "metrics", "repeats", "settings", "settings_requested", "data", "model", "memory", "output",
               "telemetry", "env", "process", "schedule", "gpu_before", "history")


def label(row) -> str:
    """A cell's name without its stack: workload and task, then its variant and inputs where not the default."""
    extra = ", ".join(x for x in (str(row.get("variant") or ""), inputs_of(str(row.get(col(Record, "cell_id")) or "")))
                      if x and x != "default")
    name = f"{row.get('workload')} {row.get('task')}"
    return f"{name} ({extra})" if extra else name


def ms_stats(row, ci: Callable[[list[float]], tuple[float, float] | None]) -> dict[str, Any]:
    """An ok row's ms/step (``metrics.ms_per_step_mean``: the median across repeats) with the repeats' count and
    the interval ``ci`` gives for the per-repeat values (``bench.results.compare.median_ci``); empty otherwise."""
    ms = _num(row.get(MS))
    if row.get("status") != "ok" or ms is None:
        return {}
    values = repeat_values(row, "ms_per_step_mean")
    interval = ci(values)
    return {"ms": ms, "n": len(values), "low": interval[0] if interval else None,
            "high": interval[1] if interval else None}


def _percent(v: Any) -> str:
    f = _num(v)
    return "" if f is None else f"{100 * f:.1f} %"


def _blank(text: str) -> str:
    return "" if text == "n/a" else text


#: The cells table: (heading, the cell's text from its row and ``ms_stats``).
COLUMNS: tuple[tuple[str, Callable[[Any, dict[str, Any]], str]], ...] = (
    ("stack", lambda r, s: str(r["stack"])),
    ("cell", lambda r, s: label(r)),
    ("size", lambda r, s: str(r.get("size") or "")),
    ("status", lambda r, s: str(r["status"])),
    ("ms/step", lambda r, s: fmt(s["ms"], 2) if s else ""),
    ("95 % CI", lambda r, s: f"[{fmt(s['low'], 2)}, {fmt(s['high'], 2)}]" if s and s["low"] is not None else ""),
    ("repeats", lambda r, s: str(s["n"]) if s else ""),
    ("s/epoch", lambda r, s: s_per_epoch_text(r)),  # the report's reading: fit_call_s_per_epoch, else † legacy
    ("J/epoch", lambda r, s: _blank(fmt(r.get(col(Metrics, "j_per_epoch")), 1))),
    ("MFU", lambda r, s: _percent(r.get(col(Metrics, "mfu")))),
    ("reason", lambda r, s: "" if r["status"] == "ok" else str(r.get("reason") or "")),
)


def cell_rows(df, ci: Callable[[list[float]], tuple[float, float] | None]) -> list[dict[str, Any]]:
    """One entry per row of ``df``: ``index`` (the row's index in ``df``, the record's key), ``cells`` (texts under
    ``COLUMNS``' headings), ``stats`` (``ms_stats``), its ``label``, ``stack``, ``suite`` and ``status``, in ``df``'s
    order."""
    out = []
    for index, row in df.iterrows():
        stats = ms_stats(row, ci)
        out.append({"index": int(index), "cells": [f(row, stats) for _, f in COLUMNS], "stats": stats,
                    "label": label(row), "stack": str(row["stack"]), "suite": str(row["suite"]),
                    "status": str(row["status"])})
    return out


def _plain(v: Any) -> Any:
    """A cell value as JSON takes it: numpy scalars as Python ones; None for NaN and infinities."""
    if hasattr(v, "item") and not isinstance(v, (list, dict)):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    return v


def record_of(row) -> dict[str, dict[str, Any]]:
    """A collected row as the record panel shows it: {block: {field: value}}, the fields that hold a value, blocks
    in ``BLOCK_ORDER`` (top-level fields under ``cell``)."""
    groups: dict[str, dict[str, Any]] = {}
    for column, value in row.items():
        v = _plain(value)
        if v is None or v == "":
            continue
        block, _, rest = str(column).partition(".")
        groups.setdefault(block if rest else "cell", {})[rest or block] = v
    order = {b: i for i, b in enumerate(BLOCK_ORDER)}
    return dict(sorted(groups.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))

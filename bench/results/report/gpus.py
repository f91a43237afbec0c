"""Runs that span several GPUs: one section per GPU, a cross-GPU comparison, and GPU time and cost.

Cells measured on different GPUs (different NVML UUIDs) never share a comparison table: two stacks
compared across two machines would compare the machines. When a collected run holds rows from several
GPUs (``make cloud-collect`` of jobs on A100 and H100), the report gets one section per GPU and a
"GPUs" section that compares the same cell across GPU models (ratios to the first model).
"""

from __future__ import annotations

import re
from typing import Any

from bench.results.compare import with_inputs
from bench.results.report.common import json_list, md_table
from bench.results.schema import Env, Metrics, Repeats, col


def gpu_label(row) -> str:
    """``<GPU name> (<UUID's first 12 characters>)`` for a GPU row, ``CPU`` otherwise."""
    if row.get("device") != "gpu":
        return "CPU"
    uuid = str(row.get(col(Env, "gpu", "uuid")) or "unknown")
    return f"{row.get(col(Env, 'gpu', 'name')) or 'unknown GPU'} ({uuid[:12]})"


def gpu_groups(df) -> list[tuple[str, Any]]:
    """The run's rows split by the GPU they ran on, as ``[(label, rows)]`` sorted by label; a single
    ``("", df)`` when every row ran on one GPU (or none)."""
    if df.empty:
        return [("", df)]
    labels = df.apply(gpu_label, axis=1)
    if labels.nunique() <= 1:
        return [("", df)]
    return [(label, df[labels == label]) for label in sorted(labels.unique())]


def slug(label: str) -> str:
    """A file-name-safe form of a GPU label (the plots folder of its section)."""
    return re.sub(r"[^A-Za-z0-9]+", "-", label).strip("-").lower() or "gpu"


def gpu_comparison(df) -> list[str]:
    """Markdown: mean ms/step of the same cell on each GPU model (median over GPUs of one model), and each
    model's ratio to the first; only cells that ran on at least two models. A cell is its suite, workload, task,
    size, variant, the inputs its id names (``inputs_of``: a batch-64 cell is never medianed with the default one)
    and stack."""
    ok = df[(df["status"] == "ok") & (df["device"] == "gpu")]
    if ok.empty or col(Env, "gpu", "name") not in ok.columns:
        return []
    ok = with_inputs(ok)
    key = ["suite", "workload", "task", "size", "variant", "inputs", "stack"]
    table = ok.pivot_table(index=key, columns=col(Env, "gpu", "name"), values=col(Metrics, "ms_per_step_mean"),
                           aggfunc="median")
    table = table.dropna(thresh=2)
    if table.empty:
        return ["No cell ran on two GPU models.", ""]
    models = list(table.columns)
    head = [*key, *(f"{m} ms/step" for m in models), *(f"{m} / {models[0]}" for m in models[1:])]
    rows = []
    for idx, r in table.iterrows():
        vals = [f"{r[m]:.2f}" if r[m] == r[m] else "-" for m in models]
        ratios = [f"{r[m] / r[models[0]]:.3f}" if r[m] == r[m] and r[models[0]] == r[models[0]] else "-"
                  for m in models[1:]]
        rows.append([*map(str, idx), *vals, *ratios])
    return [f"Mean ms/step of the same cell on each GPU model; ratios to {models[0]} (below 1: faster).", "",
            *md_table(head, rows), ""]


def gpu_seconds(df) -> float:
    """GPU-seconds of a run: every GPU row's repeats' process time (``repeats.gpu_s``, or the sum of
    ``repeats.process_wall_s`` in records older than it)."""
    total = 0.0
    for _, r in df[df["device"] == "gpu"].iterrows():
        value = r.get(col(Repeats, "gpu_s"))
        if value == value and value is not None:
            total += float(value)
            continue
        total += sum(json_list(r.get(col(Repeats, "process_wall_s"))) or [])
    return total


def cost_line(df, price_per_hour: float | None) -> str | None:
    """``- GPU time: ... GPU-hours`` (and ``$`` at ``price_per_hour``, never guessed); None on a CPU run."""
    if not (df["device"] == "gpu").any():
        return None
    hours = gpu_seconds(df) / 3600.0
    text = f"- GPU time: {hours:.2f} GPU-hours in cell processes (image builds and container starts not counted)"
    if price_per_hour is not None:
        text += f"; ${hours * price_per_hour:,.2f} at ${price_per_hour:g} per GPU-hour (as given)"
    return text

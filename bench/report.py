"""``bench report RUN.csv|DIR ...``: a Markdown report with PNG plots from collected CSVs.

One CSV gives one run's report; several (or a directory: every bench CSV in it, as ``make report``
passes ``results/``) give one ``report.md`` with a section per run, so the committed
``results/report.md`` covers every suite that was collected. Per run: its provenance (GPU, driver,
versions, date), the Keras 3 benchmark's Table 2 (suite ``paper``: ours beside the published A100
value, Figure 1's speedup plot), the classic suite's ms/step table, and the tuning study (per stack:
out-of-the-box vs best configuration, the full grid beside the reference's published time, plots, and
which of the study's findings hold on our data). Cells that are not ok are shown with their status and
their reason in a footnote.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from bench import reference
from bench.knobs import variant_name
from bench.stacks import STACKS, get_stack
from bench.sweep import normalise

REFERENCE_CSV = "mnist_cnn_tuning_4060ti.csv"
PAPER_CSV = "keras_io_benchmarks_2024.csv"
#: A stack's name in the published tables -> our stack id (``Stack.reference``).
REFERENCE_STACKS = {s.reference: s.id for s in STACKS.values() if s.reference}


def paper_columns(df) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The paper table's stack columns: (Keras stacks, the published ones; other stacks), in ``STACKS``
    order, each a default stack or one that has paper rows in ``df``."""
    ran = set(df.loc[df["suite"] == "paper", "stack"]) if {"suite", "stack"} <= set(df.columns) else set()
    shown = [s for s in STACKS.values() if s.default or s.id in ran]
    return (tuple(s.id for s in shown if s.engine == "keras"), tuple(s.id for s in shown if s.engine != "keras"))


def _num(v) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def fmt(v, digits: int = 1, unit: str = "") -> str:
    f = _num(v)
    return "n/a" if f is None else f"{f:.{digits}f}{unit}"


# ---- the reference's published tuning times -------------------------------------------------------

def reference_settings(row: dict[str, str]) -> list[tuple[dict[str, Any], float]]:
    """(settings, published seconds for 41 epochs) pairs of one reference row; a PyTorch
    tensor_dataset row gives a second pair for its time_preload_s column (preload=True)."""
    stack = REFERENCE_STACKS.get(row["stack"])
    if stack is None:
        return []
    engine = get_stack(stack).engine
    if engine == "keras":
        jit = {"false": False, "true": True, "auto": "auto"}[row["jit"]]
        s = {"data_pipeline": row["data_pipeline"], "steps_per_execution": int(row["steps_per_execution"]),
             "jit_compile": jit, "precision": row["precision"]}
    else:
        s = {"data_pipeline": row["data_pipeline"],
             "num_workers": int(row["num_workers"] or 0), "compile": row["jit"], "precision": row["precision"],
             "grad_scaler": row["grad_scaler"] == "true", "matmul_precision": row["matmul_precision"] or "highest"}
    out = []
    if _num(row["time_s"]) is not None:
        out.append((normalise(engine, s), float(row["time_s"])))
    if engine == "torch" and row["data_pipeline"] == "tensor_dataset" and _num(row["time_preload_s"]) is not None:
        out.append((normalise(engine, {**s, "preload": True}), float(row["time_preload_s"])))
    return out


def reference_times() -> dict[tuple[str, str], float]:
    """(stack id, variant name) -> published whole-training seconds (41 epochs, RTX 4060 Ti)."""
    out = {}
    for row in reference.read_csv(REFERENCE_CSV):
        for settings, seconds in reference_settings(row):
            out[(REFERENCE_STACKS[row["stack"]], variant_name(settings))] = seconds
    return out


# ---- sections -------------------------------------------------------------------------------------

def run_span(df) -> str:
    """The run's date and span: first cell start to last cell end (UTC), and the cells' own process time
    (what the runner measured per cell; the span also holds container starts and image checks)."""
    import pandas as pd

    end = pd.to_datetime(df["finished_utc"], utc=True, errors="coerce") if "finished_utc" in df else None
    if end is None or end.isna().all():
        return "- Run date: n/a"
    start = pd.to_datetime(df["started_utc"], utc=True, errors="coerce") if "started_utc" in df else end
    first, last = start.min() if start.notna().any() else end.min(), end.max()
    text = (f"- Run date (UTC): {first:%Y-%m-%d}; cells ran from {first:%H:%M:%S} to {last:%Y-%m-%d %H:%M:%S} "
            f"({(last - first).total_seconds() / 60:.1f} min")
    if "process.wall_s" in df and df["process.wall_s"].notna().any():
        text += f"; cell processes {df['process.wall_s'].sum() / 60:.1f} min in all"
    return text + ")"


def provenance(df) -> list[str]:
    def uniq(col: str) -> str:
        if col not in df.columns:
            return "n/a"
        vals = sorted({str(v) for v in df[col].dropna() if str(v) not in ("", "nan")})
        return ", ".join(vals) or "n/a"

    lines = ["## Provenance", "", run_span(df),
             f"- Device: {uniq('device')}; GPU: {uniq('env.gpu.name')}; driver: {uniq('env.gpu.driver')}",
             f"- CPU: {uniq('env.cpu_model')}; host: {uniq('env.host')}; images: {uniq('env.image')}",
             f"- bench git commit: {uniq('env.git_commit')}"]
    for sid in STACKS:
        rows = df[df["stack"] == sid]
        if rows.empty:
            continue
        pk = [c for c in rows.columns if c.startswith("env.packages.") and rows[c].notna().any()]
        versions = ", ".join(f"{c.removeprefix('env.packages.')} {rows[c].dropna().iloc[0]}" for c in pk
                             if c.removeprefix("env.packages.") in ("tensorflow", "tf-keras", "keras", "jax",
                                                                    "jaxlib", "torch"))
        py = rows["env.python"].dropna() if "env.python" in rows else []
        lines.append(f"- {sid}: {versions or 'n/a'}; Python {py.iloc[0] if len(py) else 'n/a'}")
    if (df["device"] == "cpu").any():
        lines.append("- **CPU rows are smoke tests of the harness, not GPU benchmarks.**")
    if _flagged(df, "env.gpu.mig_mode"):
        lines.append("- **MIG mode: the GPU was partitioned; power, energy and MFU are the whole GPU's figures, "
                     "not comparable with a full GPU's.**")
    jit = _flagged(df, "env.cuda_cache.jit_compiled")
    if jit:
        lines.append(f"- {jit} cell(s) paid for the driver's PTX JIT compilation (the CUDA cache grew): their "
                     "first step/epoch includes it; steady-state figures do not.")
    return lines + [""]


def _flagged(df, col: str) -> int:
    """How many rows have ``col`` true (0 when the column is absent)."""
    if col not in df.columns:
        return 0
    return int(df[col].map(lambda v: str(v).lower() == "true").sum())


class Footnotes:
    """Collects reasons of cells that are not ok; ``ref`` returns the marker to put in a table.

    ``prefix`` keeps the labels of several runs in one document apart (``[^paper-full-gpu-1]``)."""

    def __init__(self, prefix: str = ""):
        self.prefix = prefix
        self.items: list[str] = []

    def ref(self, row) -> str:
        self.items.append(f"{row['stack']} {row['workload']} {row['variant']}: {row['status']}: {row.get('reason')}")
        return f"{row['status']} [^{self.prefix}{len(self.items)}]"

    def lines(self) -> list[str]:
        return [f"[^{self.prefix}{i}]: {text}" for i, text in enumerate(self.items, 1)]


def classic_section(df, notes: Footnotes) -> list[str]:
    rows = df[df["suite"] == "classic"]
    if rows.empty:
        return []
    stacks = [s for s in STACKS if s in set(rows["stack"])]
    out = ["## Classic suite: ms/step (mean over steady-state steps)", "",
           "| workload | task | " + " | ".join(stacks) + " |", "|---|---|" + "---|" * len(stacks)]
    for (w, t), g in rows.groupby(["workload", "task"], sort=False):
        cells = []
        for s in stacks:
            r = g[g["stack"] == s]
            if r.empty:
                cells.append("-")
            else:
                r = r.iloc[0]
                cells.append(fmt(r.get("metrics.ms_per_step_mean"), 2) if r["status"] == "ok" else notes.ref(r))
        out.append(f"| {w} | {t} | " + " | ".join(cells) + " |")
    return out + [""]


def _final_loss(row) -> float | None:
    import json

    text = row.get("history.loss")
    try:
        vals = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return float(vals[-1]) if vals else None


def tuning_frame(df):
    rows = df[df["suite"] == "tuning"].copy()
    if rows.empty:
        return rows
    ref = reference_times()
    rows["time_s"] = rows.get("metrics.total_train_s")
    # the published times are for the full size (41 epochs of 60,000 images): beside smoke rows they mislead
    rows["reference_time_s"] = [ref.get((s, v)) if size == "full" else None
                                for s, v, size in zip(rows["stack"], rows["variant"], rows["size"], strict=True)]
    rows["final_loss"] = [_final_loss(r) for _, r in rows.iterrows()]
    return rows


def _col(r, name):
    return r[name] if name in r.index else None


def _bool(v) -> bool | None:
    """A CSV boolean (True/False, 'True'/'False'); None when missing."""
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v in ("True", "False"):
        return v == "True"
    return None


def tuning_section(rows, notes: Footnotes, plots: dict[str, str]) -> list[str]:
    if rows.empty:
        return []
    out = ["## Tuning study (MNIST CNN)", "",
           "Time = training steps of all epochs, compilation included, validation excluded (the study's "
           "whole-training seconds). Reference = the published time on an RTX 4060 Ti (other hardware: "
           "compare shapes, not absolute values). J/epoch from the NVML energy counter.", "",
           "### Out of the box vs best, per stack", "",
           "| stack | out-of-the-box | time (s) | best configuration | time (s) | speedup | GPU util % | "
           "power W | J/epoch | final loss |", "|---|---|---|---|---|---|---|---|---|---|"]
    for sid in [s for s in STACKS if s in set(rows["stack"])]:
        g = rows[rows["stack"] == sid]
        ok = g[g["status"] == "ok"].dropna(subset=["time_s"])
        base = g[g["baseline"].map(_bool) == True]  # noqa: E712  (pandas column comparison)
        if ok.empty:
            out.append(f"| {sid} | " + " | ".join(["n/a"] * 9) + " |")
            continue
        best = ok.loc[ok["time_s"].idxmin()]
        b = base.iloc[0] if not base.empty else None
        b_time = _num(b["time_s"]) if b is not None and b["status"] == "ok" else None
        speed = f"{b_time / best['time_s']:.2f}x" if b_time else "n/a"
        if b is None:
            b_name, b_text = "n/a", "n/a"
        else:
            b_name, b_text = b["variant"], fmt(b_time) if b["status"] == "ok" else notes.ref(b)
        out.append(f"| {sid} | {b_name} | {b_text} | {best['variant']} | {fmt(best['time_s'])} | {speed} | "
                   f"{fmt(_col(best, 'telemetry.gpu_util_pct.mean'))} | {fmt(_col(best, 'telemetry.power_w.mean'))} | "
                   f"{fmt(_col(best, 'metrics.j_per_epoch'))} | {fmt(best['final_loss'], 4)} |")
    out += ["", "### Full grid", "",
            "| stack | configuration | status | time (s) | reference (s) | ms/step p50 | GPU util % | power W | "
            "J/epoch | throttled |", "|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in rows.sort_values(["stack", "variant"]).iterrows():
        status = "ok" if r["status"] == "ok" else notes.ref(r)
        thr = {True: "yes", False: "no"}.get(_bool(_col(r, "telemetry.throttled")), "n/a")
        name = f"{r['variant']}{' (baseline)' if _bool(r['baseline']) else ''}"
        out.append(f"| {r['stack']} | {name} | {status} | {fmt(r['time_s'])} | {fmt(r['reference_time_s'])} | "
                   f"{fmt(_col(r, 'metrics.ms_per_step_p50'), 2)} | {fmt(_col(r, 'telemetry.gpu_util_pct.mean'))} | "
                   f"{fmt(_col(r, 'telemetry.power_w.mean'))} | {fmt(_col(r, 'metrics.j_per_epoch'))} | {thr} |")
    caveat = (" (CPU smoke run: says nothing about GPUs)" if (rows["device"] == "cpu").any() else "")
    out += ["", f"### What the study found, checked on our data{caveat}", "", *findings(rows), ""]
    for title, name in plots.items():
        out.append(f"![{title}]({name})")
    return out + [""]


def findings(rows) -> list[str]:
    """Sentences that say, from our data, whether two of the study's findings hold."""
    ok = rows[(rows["status"] == "ok") & rows["time_s"].notna()]
    out = []
    keras = ok[ok["stack"].map(lambda s: get_stack(s).engine == "keras")]
    pairs = []
    for _, r in keras.iterrows():
        if int(_settings_of(r).get("steps_per_execution", 1)) != 512:
            continue
        twin = variant_name({k: v for k, v in _settings_of(r).items() if k != "steps_per_execution"})
        m = keras[(keras["stack"] == r["stack"]) & (keras["variant"] == twin)]
        if not m.empty:
            pairs.append(float(m.iloc[0]["time_s"]) / float(r["time_s"]))
    if pairs:
        import numpy as np

        med = float(np.median(pairs))
        verdict = "holds" if med > 1.1 else "does not hold"
        out.append(f"- *steps_per_execution matters a lot for Keras*: {verdict} here: steps_per_execution=512 "
                   f"trains {med:.2f}x as fast as 1 (median over {len(pairs)} otherwise identical pairs).")
    else:
        out.append("- *steps_per_execution matters a lot for Keras*: no ok pair of runs to judge.")
    tf = ok[ok["stack"] == "keras3-tf"]
    if not tf.empty:
        best = tf.loc[tf["time_s"].idxmin()]
        s = _settings_of(best)
        mixed_jit = s.get("precision") == "mixed_float16" and s.get("jit_compile") in (True, "auto")
        verdict = "holds" if mixed_jit else "does not hold"
        out.append(f"- *mixed precision + jit gives Keras/TF its best time*: {verdict} here: the fastest "
                   f"keras3-tf configuration is `{best['variant']}` ({fmt(best['time_s'])} s).")
    else:
        out.append("- *mixed precision + jit gives Keras/TF its best time*: no ok keras3-tf run to judge.")
    return out


def _settings_of(r) -> dict[str, Any]:
    """The requested settings of a CSV row, with CSV floats and 'True'/'False' texts turned back."""
    out = {}
    for col in r.index:
        v = r[col]
        if not col.startswith("settings_requested.") or v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        flag = _bool(v) if isinstance(v, str) else None
        out[col.removeprefix("settings_requested.")] = v if flag is None else flag
    return out


def tuning_plots(rows, out_dir: Path) -> dict[str, str]:
    """time per configuration (one panel per stack) and energy vs time; returns {title: file name}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = rows[(rows["status"] == "ok") & rows["time_s"].notna()]
    if ok.empty:
        return {}
    stacks = [s for s in STACKS if s in set(ok["stack"])]
    fig, axes = plt.subplots(len(stacks), 1, figsize=(10, 0.32 * len(ok) + 1.5 * len(stacks)), squeeze=False)
    for ax, sid in zip(axes[:, 0], stacks, strict=True):
        g = ok[ok["stack"] == sid].sort_values("time_s")
        ax.barh(g["variant"], g["time_s"], color=["tab:orange" if _bool(b) else "tab:blue" for b in g["baseline"]])
        ax.set_title(f"{sid} (orange: out of the box)", fontsize=9)
        ax.tick_params(axis="y", labelsize=6)
        ax.set_xlabel("training time (s)")
        ax.invert_yaxis()
    fig.tight_layout()
    files = {"Training time per configuration": "tuning_time.png"}
    fig.savefig(out_dir / "tuning_time.png", dpi=110)
    plt.close(fig)
    if "metrics.j_per_epoch" in ok and ok["metrics.j_per_epoch"].notna().any():
        fig, ax = plt.subplots(figsize=(7, 5))
        for sid in stacks:
            g = ok[ok["stack"] == sid]
            ax.scatter(g["time_s"], g["metrics.j_per_epoch"], label=sid)
        ax.set_xlabel("training time (s)")
        ax.set_ylabel("energy per epoch (J)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out_dir / "tuning_energy_vs_time.png", dpi=110)
        plt.close(fig)
        files["Energy per epoch vs training time"] = "tuning_energy_vs_time.png"
    return files


# ---- the Keras 3 benchmark (suite ``paper``) ------------------------------------------------------------

def published_ms() -> dict[tuple[str, str, int, str], float | None]:
    """(model, task, batch size, stack id) -> published A100 ms/step (None where the source says NA)."""
    return {(r["model"], r["task"], int(r["batch_size"]), REFERENCE_STACKS[r["stack"]]): _num(r["ms_per_step"])
            for r in reference.read_csv(PAPER_CSV)}


def paper_rows(df) -> list[dict[str, Any]]:
    """One entry per published row (model, task, batch) plus any extra row we ran, each with our cell per
    stack (the CSV row or None) and the published value per stack."""
    pub = published_ms()
    keys = list(dict.fromkeys((m, t, b) for m, t, b, _ in pub))
    ours = df[df["suite"] == "paper"] if "suite" in df.columns else df.iloc[0:0]
    for _, r in ours.iterrows():
        key = (r["workload"], r["task"], int(r["batch_size"]) if _num(r.get("batch_size")) is not None else -1)
        if key not in keys:
            keys.append(key)
    rows = []
    for m, t, b in keys:
        cells = {}
        for sid in STACKS:
            hit = ours[(ours["workload"] == m) & (ours["task"] == t) & (ours["stack"] == sid)
                       & (ours["batch_size"].map(_num) == b)] if not ours.empty else ours
            cells[sid] = hit.iloc[0] if len(hit) else None
        rows.append({"model": m, "task": t, "batch": b, "ours": cells,
                     "published": {sid: pub.get((m, t, b, sid)) for sid in STACKS}})
    return rows


def _ours_ms(cell) -> float | None:
    return _num(cell["metrics.ms_per_step_mean"]) if cell is not None and cell["status"] == "ok" else None


def _best_keras3(values: dict[str, float | None]) -> tuple[str | None, float | None]:
    ok = {s: v for s, v in values.items() if STACKS[s].keras_major == 3 and v is not None}
    if not ok:
        return None, None
    sid = min(ok, key=ok.get)
    return sid, ok[sid]


def paper_section(df, notes: Footnotes, plots: dict[str, str]) -> list[str]:
    """Table 2 of the Keras 3 benchmark with our value beside the published one (ours / A100, ratio)."""
    if "suite" not in df.columns or not (df["suite"] == "paper").any():
        return []
    rows = paper_rows(df)
    keras_cols, other_cols = paper_columns(df)
    head = ["model", "task", "batch", *(STACKS[s].label for s in keras_cols), "Keras 3 best",
            *(STACKS[s].label for s in other_cols)]
    out = ["## Keras 3 benchmark (Table 2 layout)", "",
           "ms/step (mean over the timed steps, lower is better). Each cell: ours / published A100 value "
           "(ours divided by published; only for full-size GPU rows). Bold: our fastest Keras 3 stack. The "
           "published table has no plain PyTorch column.", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        ours = {sid: _ours_ms(c) for sid, c in row["ours"].items()}
        best_sid, best = _best_keras3(ours)
        _, pub_best = _best_keras3(row["published"])
        cells = []
        for sid in keras_cols:
            cell, pub = row["ours"][sid], row["published"][sid]
            pub_text = fmt(pub, 2) if pub is not None else "NA"
            if cell is None:
                text = f"not run / {pub_text}"
            elif cell["status"] != "ok":
                text = f"{notes.ref(cell)} / {pub_text}"
            else:
                mine = fmt(ours[sid], 2)
                mine = f"**{mine}**" if sid == best_sid else mine
                comparable = cell["device"] == "gpu" and cell["size"] == "full"  # never a CPU smoke ratio
                ratio = f" ({ours[sid] / pub:.2f}x)" if pub and comparable else ""
                text = f"{mine} / {pub_text}{ratio}"
            cells.append(text)
        best_text = f"{fmt(best, 2)} / {fmt(pub_best, 2)}" if best is not None else f"n/a / {fmt(pub_best, 2)}"
        others = []
        for sid in other_cols:
            cell = row["ours"][sid]
            others.append("not run" if cell is None else notes.ref(cell) if cell["status"] != "ok"
                          else fmt(ours[sid], 2))
        out.append(f"| {row['model']} | {row['task']} | {row['batch']} | " + " | ".join(cells)
                   + f" | {best_text} | " + " | ".join(others) + " |")
    out += ["", *paper_throughput(rows, keras_cols + other_cols)]
    for title, name in plots.items():
        out.append(f"![{title}]({name})")
    return out + [""]


def paper_throughput(rows: list[dict[str, Any]], stacks: tuple[str, ...]) -> list[str]:
    """Throughput (examples/s; tokens/s for generate) and MFU per stack (``stacks``) for every row we ran."""
    lines = []
    for row in rows:
        cells = []
        for sid in stacks:
            c = row["ours"][sid]
            if c is None or c["status"] != "ok":
                cells.append("")
                continue
            key = "metrics.tokens_per_s" if row["task"] == "generate" else "metrics.examples_per_s"
            rate = fmt(_num(c.get(key)), 1, " tok/s" if row["task"] == "generate" else "/s")
            mfu, measured = _num(c.get("metrics.mfu")), _num(c.get("metrics.mfu_measured"))
            cells.append(rate + (f", MFU {100 * mfu:.1f} %" if mfu is not None else "")
                         + (f" ({100 * measured:.1f} % of measured peak)" if measured is not None else ""))
        if any(cells):
            lines.append(f"| {row['model']} | {row['task']} | {row['batch']} | " + " | ".join(cells) + " |")
    if not lines:
        return []
    head = ["model", "task", "batch", *stacks]
    return ["Throughput (examples/s; generated tokens/s for generate) and MFU (model FLOPs from "
            "`bench/reference/paper_flops.csv` over the GPU's dense peak for the dtype in use; blank where "
            "the GPU or the shapes are not tabulated; in brackets, over the GEMM peak `make doctor` measured "
            "in that image on that GPU):", "", "| " + " | ".join(head) + " |",
            "|" + "---|" * len(head), *lines, ""]


def paper_plots(df, out_dir: Path) -> dict[str, str]:
    """Figure 1 (Keras 3 best vs Keras 2 throughput speedup per row, ours beside published) and ms/step
    per stack per row. Rows without the needed ok values are left out of a plot, not invented."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rows = paper_rows(df)
    files: dict[str, str] = {}
    labels, ours_sp, pub_sp = [], [], []
    for row in rows:
        ours = {sid: _ours_ms(c) for sid, c in row["ours"].items()}
        _, best = _best_keras3(ours)
        _, pub_best = _best_keras3(row["published"])
        k2, pub_k2 = ours.get("keras2-tf"), row["published"].get("keras2-tf")
        if best is None or k2 is None:
            continue
        labels.append(f"{row['model']} {row['task']} {row['batch']}")
        ours_sp.append(k2 / best)
        pub_sp.append(pub_k2 / pub_best if pub_k2 and pub_best else np.nan)
    if labels:
        fig, ax = plt.subplots(figsize=(8, 0.45 * len(labels) + 1.5))
        y = np.arange(len(labels))
        ax.barh(y - 0.2, ours_sp, height=0.4, label="ours")
        ax.barh(y + 0.2, pub_sp, height=0.4, label="published (A100)")
        ax.set_yticks(y, labels, fontsize=8)
        ax.axvline(1.0, color="grey", lw=0.8)
        ax.set_xlabel("throughput speedup, Keras 3 best over Keras 2")
        ax.invert_yaxis()
        ax.legend()
        fig.tight_layout()
        fig.savefig(out_dir / "paper_speedup.png", dpi=110)
        plt.close(fig)
        files["Keras 3 best vs Keras 2 speedup (Figure 1)"] = "paper_speedup.png"
    keras_cols, other_cols = paper_columns(df)
    stacks = keras_cols + other_cols
    data = [(f"{r['model']} {r['task']} {r['batch']}", [_ours_ms(r["ours"][s]) for s in stacks]) for r in rows]
    data = [(name, vals) for name, vals in data if any(v is not None for v in vals)]
    if data:
        fig, ax = plt.subplots(figsize=(9, 0.6 * len(data) + 1.5))
        y = np.arange(len(data))
        h = 0.8 / len(stacks)
        for i, sid in enumerate(stacks):
            vals = [np.nan if v[i] is None else v[i] for _, v in data]
            ax.barh(y + (i - len(stacks) / 2 + 0.5) * h, vals, height=h, label=sid)
        ax.set_yticks(y, [name for name, _ in data], fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("ms/step (log scale, lower is better)")
        ax.invert_yaxis()
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out_dir / "paper_ms_per_step.png", dpi=110)
        plt.close(fig)
        files["ms/step per stack"] = "paper_ms_per_step.png"
    return files


def read_bench_csv(csv_path: Path):
    """A collected CSV as a DataFrame.

    Raises:
        FileNotFoundError: the CSV does not exist. ValueError: it is not a bench CSV (a required column
        is missing, or it cannot be parsed).
    """
    import pandas as pd

    try:
        df = pd.read_csv(csv_path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise ValueError(f"{csv_path} is not a bench CSV ({e})") from e
    for col in ("stack", "suite", "workload", "variant", "status"):
        if col not in df.columns:
            raise ValueError(f"{csv_path} is not a bench CSV (no {col!r} column)")
    if "baseline" not in df.columns:
        df["baseline"] = False
    return df


def run_sections(df, plot_dir: Path, link_prefix: str, notes: Footnotes) -> list[str]:
    """One run's sections (headings from ``##``), its PNGs written to ``plot_dir`` and linked as
    ``link_prefix + file name``; cells that are not ok land in ``notes``."""
    tuning = tuning_frame(df)
    has_paper = bool((df["suite"] == "paper").any())
    if has_paper or not tuning.empty:
        plot_dir.mkdir(parents=True, exist_ok=True)
    plots = tuning_plots(tuning, plot_dir) if not tuning.empty else {}
    paper_files = paper_plots(df, plot_dir) if has_paper else {}

    def linked(files: dict[str, str]) -> dict[str, str]:
        return {title: link_prefix + name for title, name in files.items()}

    lines = [*provenance(df), *paper_section(df, notes, linked(paper_files)), *classic_section(df, notes),
             *tuning_section(tuning, notes, linked(plots))]
    if notes.items:
        lines += ["## Cells that did not run", "", *notes.lines(), ""]
    return lines


def load_runs(paths: list[Path]) -> tuple[list[tuple[str, Any]], list[str]]:
    """The collected runs named by ``paths``, each CSV read once; a directory stands for every ``*.csv``
    directly in it (sorted by name).

    Returns ``([(run, DataFrame)], warnings)`` with ``run`` the CSV's file name without ``.csv``: a CSV
    found in a directory that is not a bench CSV (for example a ``bench compare --out`` table) is left
    out with a warning; one named explicitly raises.

    Raises:
        ValueError: an explicitly named file is not a bench CSV, or no CSV is found at all.
    """
    runs: dict[Path, tuple[str, Any]] = {}
    warnings: list[str] = []
    for p in paths:
        if not p.is_dir():
            runs.setdefault(p.resolve(), (p.stem, read_bench_csv(p)))
            continue
        for f in sorted(p.glob("*.csv")):
            if f.resolve() in runs:
                continue
            try:
                runs[f.resolve()] = (f.stem, read_bench_csv(f))
            except ValueError as e:
                warnings.append(f"skipped {e}")
    if not runs:
        raise ValueError(f"no bench CSV in {', '.join(map(str, paths))} (run `make collect` first)")
    return list(runs.values()), warnings


def write_report(runs: list[tuple[str, Any]], out_dir: Path) -> Path:
    """Write ``out_dir/report.md`` from collected runs (``load_runs``); returns the report's path.

    Each run's PNGs go to ``out_dir/plots/<run>/``. With several runs the report has one
    ``## Run <run>`` section per run, in the order given.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    if len(runs) == 1:
        run, df = runs[0]
        lines = [f"# Benchmark report: {run}", "",
                 *run_sections(df, out_dir / "plots" / run, f"plots/{run}/", Footnotes())]
    else:
        lines = ["# Benchmark report", "", "Runs (one section each, from `results/<run>.csv`):", ""]
        lines += [f"- [{run}](#run-{run.replace('.', '')}): {len(df)} cells, "
                  f"{int((df['status'] == 'ok').sum())} ok" for run, df in runs]
        lines.append("")
        for run, df in runs:
            body = run_sections(df, out_dir / "plots" / run, f"plots/{run}/", Footnotes(f"{run}-"))
            lines += [f"## Run {run}", "", *("#" + ln if ln.startswith("#") else ln for ln in body)]
    path = out_dir / "report.md"
    tmp = path.with_name(".report.md.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(path)
    return path

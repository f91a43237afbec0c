"""The report's plots (matplotlib, Agg): the tuning study's time and energy figures and the Keras 3
benchmark's Figure 1 and ms/step bars. Each function writes PNGs into a folder and returns
{title: file name} for the rows that have the values it needs (nothing is invented for the others)."""

from __future__ import annotations

from pathlib import Path

from bench.core.stacks import STACKS
from bench.results.report.paper import best_keras3, ours_ms, paper_columns, paper_rows
from bench.results.report.tuning import as_bool
from bench.results.schema import Metrics, col


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
        ax.barh(g["variant"], g["time_s"], color=["tab:orange" if as_bool(b) else "tab:blue" for b in g["baseline"]])
        ax.set_title(f"{sid} (orange: out of the box)", fontsize=9)
        ax.tick_params(axis="y", labelsize=6)
        ax.set_xlabel("training time (s)")
        ax.invert_yaxis()
    fig.tight_layout()
    files = {"Training time per configuration": "tuning_time.png"}
    fig.savefig(out_dir / "tuning_time.png", dpi=110)
    plt.close(fig)
    if col(Metrics, "j_per_epoch") in ok and ok[col(Metrics, "j_per_epoch")].notna().any():
        fig, ax = plt.subplots(figsize=(7, 5))
        for sid in stacks:
            g = ok[ok["stack"] == sid]
            ax.scatter(g["time_s"], g[col(Metrics, "j_per_epoch")], label=sid)
        ax.set_xlabel("training time (s)")
        ax.set_ylabel("energy per epoch (J)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out_dir / "tuning_energy_vs_time.png", dpi=110)
        plt.close(fig)
        files["Energy per epoch vs training time"] = "tuning_energy_vs_time.png"
    return files


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
        ours = {sid: ours_ms(c) for sid, c in row["ours"].items()}
        _, best = best_keras3(ours)
        _, pub_best = best_keras3(row["published"])
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
    data = [(f"{r['model']} {r['task']} {r['batch']}", [ours_ms(r["ours"][s]) for s in stacks]) for r in rows]
    data = [(name, vals) for name, vals in data if any(v is not None for v in vals)]
    if data:
        fig, ax = plt.subplots(figsize=(9, 0.6 * len(data) + 1.5))
        y = np.arange(len(data))
        h = 0.8 / len(stacks)
        for i, sid in enumerate(stacks):
            vals = [np.nan if (x := v[i]) is None else x for _, v in data]
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

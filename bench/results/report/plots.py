"""The report's plots (matplotlib, Agg): the tuning study's time and energy figures, the Keras 3 benchmark's
Figure 1 and ms/step bars, and the forest plots of the Versions and Keras-overhead sections. Each function writes
PNGs into a folder and returns {title: file name} for the rows that have the values it needs (nothing is invented
for the others)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.core.stacks import STACKS
from bench.results.compare import CI_LEVEL
from bench.results.report.paper import best_keras3, ours_ms, paper_columns, paper_rows
from bench.results.report.tuning import as_bool
from bench.results.report.versions import OVERHEAD_PLOT, VERSIONS_PLOT, PairTable
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
        colors = ["tab:orange" if as_bool(b) else "tab:blue" for b in g["baseline"]]
        ax.barh(g["configuration"], g["time_s"], color=colors)  # variant and inputs: one bar per cell
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

    rows = paper_rows(df)
    files = speedup_plot(plt, rows, out_dir)
    keras_cols, other_cols = paper_columns(df)
    files.update(ms_per_step_plot(plt, rows, keras_cols + other_cols, out_dir))
    return files


def speedup_plot(plt, rows: list[dict[str, Any]], out_dir: Path) -> dict[str, str]:
    """Figure 1 from ``paper_rows``' ``rows``: Keras 2's ms/step over Keras 3's best, ours beside published, into
    ``out_dir/paper_speedup.png`` with ``plt`` (matplotlib.pyplot, Agg); {} when no row has both of ours."""
    import numpy as np

    labels, ours_sp, pub_sp = [], [], []
    for row in rows:
        ours = {sid: ours_ms(c) for sid, c in row["ours"].items()}
        _, best = best_keras3(ours)
        _, pub_best = best_keras3(row["published"])
        k2, pub_k2 = ours.get("keras2-tf"), row["published"].get("keras2-tf")
        if best is None or k2 is None:
            continue
        labels.append(f"{row['label']} {row['task']} {row['batch']}")
        ours_sp.append(k2 / best)
        pub_sp.append(pub_k2 / pub_best if pub_k2 and pub_best else np.nan)
    if not labels:
        return {}
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
    return {"Keras 3 best vs Keras 2 speedup (Figure 1)": "paper_speedup.png"}


def ms_per_step_plot(plt, rows: list[dict[str, Any]], stacks: tuple[str, ...], out_dir: Path) -> dict[str, str]:
    """Our ms/step of each of ``stacks`` per row of ``paper_rows`` (log scale) into ``out_dir/paper_ms_per_step.png``
    with ``plt`` (matplotlib.pyplot, Agg); rows without a value left out, {} when none has one."""
    import numpy as np

    data = [(f"{r['label']} {r['task']} {r['batch']}", [ours_ms(r["ours"][s]) for s in stacks]) for r in rows]
    data = [(name, vals) for name, vals in data if any(v is not None for v in vals)]
    if not data:
        return {}
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
    return {"ms/step per stack": "paper_ms_per_step.png"}


#: A forest plot's dot colour per verdict (grey: too few repeats).
VERDICT_COLOR = {"higher": "tab:red", "lower": "tab:green", "noise": "black"}


def forest_plot(tables: list[PairTable], out_dir: Path, name: str, title: str) -> dict[str, str]:
    """A forest plot: per pair and cell the ms/step ratio as a dot with its confidence interval as a bar (a dot
    alone where the interval was not computed), a line at 1; writes ``out_dir/name`` and returns {title: name}
    ({} without a ratio)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [(f"{t.candidate} / {t.base}: {r['label']}", r["stats"]) for t in tables for r in t.rows
              if r["stats"].ratio is not None]
    if not points:
        return {}
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(points) + 1.5))
    for y, (_, s) in enumerate(points):
        if s.ci_low is not None and s.ci_high is not None:
            ax.plot([s.ci_low, s.ci_high], [y, y], color="tab:blue", lw=2)
        ax.plot([s.ratio], [y], "o", color=VERDICT_COLOR.get(s.verdict, "grey"), ms=4)
    ax.axvline(1.0, color="grey", lw=0.8)
    ax.set_yticks(range(len(points)), [label for label, _ in points], fontsize=7)
    ax.set_xlabel(f"ms/step ratio with its {CI_LEVEL:.0%} CI (> 1: slower)\nred: slower, green: faster, black: no "
                  "detectable change, grey: too few repeats", fontsize=8)
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return {title: name}


def comparison_plots(versions: list[PairTable], overhead: list[PairTable], out_dir: Path) -> dict[str, str]:
    """The Versions and Keras-overhead forest plots (``forest_plot``) of the pairs given; {title: file name}."""
    return {**forest_plot(versions, out_dir, "versions_ratio.png", VERSIONS_PLOT),
            **forest_plot(overhead, out_dir, "keras_overhead_ratio.png", OVERHEAD_PLOT)}

"""The classic suite's section (the 2017 Keras backend comparison): ms/step per stack and workload."""

from __future__ import annotations

from bench.report.common import Footnotes, fmt
from bench.stacks import STACKS


def classic_section(df, notes: Footnotes) -> list[str]:
    """The classic suite's table: ms/step (mean, p90) per workload and stack, not-ok cells as footnotes."""
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

"""The classic suite's section (the 2017 Keras backend comparison): ms/step per stack and workload."""

from __future__ import annotations

from bench.report.common import Footnotes, fmt
from bench.report.method import correctness_flags
from bench.stacks import STACKS


def classic_section(df, notes: Footnotes) -> list[str]:
    """The classic suite's table: ms/step (mean) per workload and stack, not-ok cells as footnotes; a cell the
    correctness gate flags carries ⚠, a full-size cell on synthetic data (syn), each explained below the table."""
    rows = df[df["suite"] == "classic"]
    if rows.empty:
        return []
    stacks = [s for s in STACKS if s in set(rows["stack"])]
    flagged = {(f["stack"], f["workload"], f["variant"]) for f in correctness_flags(rows)}
    marks: set[str] = set()
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
                if r["status"] != "ok":
                    cells.append(notes.ref(r))
                    continue
                text = fmt(r.get("metrics.ms_per_step_mean"), 2)
                if (s, w, r["variant"]) in flagged:
                    text += " ⚠"
                    marks.add("⚠: flagged by the correctness gate (Method section): the model did not learn like "
                              "the others'")
                if r.get("size") == "full" and r.get("data.source") == "synthetic":
                    text += " (syn)"
                    marks.add("(syn): synthetic data, asked for with --data synthetic: not the published task")
                cells.append(text)
        out.append(f"| {w} | {t} | " + " | ".join(cells) + " |")
    return out + [""] + [f"{m}" for m in sorted(marks)] + ([""] if marks else [])

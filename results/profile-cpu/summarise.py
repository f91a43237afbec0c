"""The tables of results/profile-cpu/README.md from the records under runs/: per stack, ms/step and the process's
wall time without and with --profile (the medians over the rounds), their ratio profiled/unprofiled with the 95 %
bootstrap interval and the Mann-Whitney p of ``bench compare`` (``bench.results.compare.ratio_stats``), and the
profile's own cost. Usage (from the repository root): python results/profile-cpu/summarise.py"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from bench.results.compare import ratio_stats

RUNS = Path(__file__).with_name("runs")
STACKS = ("pytorch", "jax", "keras3-jax", "keras3-torch", "keras3-tf")


def values(kind: str, stack: str) -> list[dict]:
    """Each round's record of ``stack`` in the ``kind`` (plain, profiled) runs, by round."""
    out = []
    for run in sorted(RUNS.glob(f"{kind}-r*"), key=lambda p: int(p.name.rsplit("r", 1)[1])):
        out += [json.loads(p.read_text()) for p in sorted((run / stack).glob("*.json"))]
    return out


def row(stack: str) -> str:
    plain, prof = values("plain", stack), values("profiled", stack)
    ms = [[r["metrics"]["ms_per_step_mean"] for r in side] for side in (plain, prof)]
    # by round: each round's pair ran back to back
    wall = [[r["process"]["wall_s"] for r in side] for side in (plain, prof)]
    s_ms, s_wall = ratio_stats(*ms), ratio_stats(*wall)
    cost = statistics.median(r["profile"]["cost_s"] for r in prof)
    ci = f"{s_ms.ci_low:.3f}-{s_ms.ci_high:.3f}" if s_ms.ci_low is not None else "n/a"
    p = f"{s_ms.p_value:.2f}" if s_ms.p_value is not None else "n/a"
    worst = max(b / a for a, b in zip(*wall, strict=True))
    own = max(r["process"]["wall_s"] / (r["process"]["wall_s"] - r["profile"]["cost_s"]) for r in prof)
    cells = [stack, f"{len(ms[0])} / {len(ms[1])}", f"{statistics.median(ms[0]):.2f}",
             f"{statistics.median(ms[1]):.2f}", f"{s_ms.ratio:.3f}", ci, p, s_ms.time_verdict,
             f"{statistics.median(wall[0]):.1f}",
             f"{statistics.median(wall[1]):.1f}", f"{s_wall.ratio:.2f}", f"{worst:.2f}", f"{cost:.2f}", f"{own:.2f}"]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    print("| stack | rounds (plain / profiled) | ms/step plain | ms/step profiled | ratio | 95 % CI | p | verdict "
          "| process s plain | process s profiled | wall ratio (medians) | wall ratio (worst round) | profile.cost_s "
          "| process / (process - cost_s), max |")
    print("|" + " --- |" * 14)
    for stack in STACKS:
        print(row(stack))
    for r in values("profiled", "pytorch")[:1] + values("profiled", "keras3-tf")[:1]:
        print(f"\n{r['stack']}: commit {r['env']['git_commit']}, {r['env']['cpu_model']}, {r['env']['cpu_count']} CPUs")


if __name__ == "__main__":
    main()

"""Draw docs/img/cpu-smoke-classic.png from the committed results/cpu-smoke/classic-smoke-cpu.csv.

Run from the repository root: python docs/img/cpu_smoke_plot.py (needs pandas and matplotlib, the collect extra).
The numbers are the CPU smoke run's (2 vCPUs, synthetic data, a few batches): a test of the harness, not a benchmark.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from bench.core.stacks import STACKS as ALL_STACKS  # noqa: E402

SRC = Path("results/cpu-smoke/classic-smoke-cpu.csv")
OUT = Path("docs/img/cpu-smoke-classic.png")

df = pd.read_csv(SRC)
df = df[df["status"] == "ok"]
STACKS = [s for s in ALL_STACKS if s in set(df["stack"])]  # bench/core/stacks.py's order
table = df.pivot(index="workload", columns="stack", values="metrics.ms_per_step_mean")[STACKS]
ax = table.plot.barh(figsize=(9, 5), logx=True, width=0.8)
ax.set_xlabel("ms/step, mean over the steady epochs (log scale; lower is faster)")
ax.set_ylabel("")
ax.set_title("Classic suite, CPU smoke run (2 vCPUs, synthetic data, 2 short epochs)\n"
             "a test of the harness, NOT a GPU benchmark", fontsize=10)
ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
plt.tight_layout()
plt.savefig(OUT, dpi=100)
print(f"wrote {OUT}")

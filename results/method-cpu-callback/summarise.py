"""Tables of results/method-cpu-callback/README.md from the collected run (python summarise.py callback-cpu.csv):
each progress form against the default (the 2017 notebooks' callback) per Keras stack and workload, with the statistic
of ``bench compare`` (``bench.results.compare``), what each form did to Keras' batch path, as recorded, and the
machine's drift within the run."""

from __future__ import annotations

import sys

import pandas as pd

from bench.results.compare import compare
from bench.results.rows import read_rows

STACKS = ["keras2-tf", "keras3-tf", "keras3-jax", "keras3-torch"]
VARIANTS = ["progress=bar", "progress=none"]
METRICS = ["ms_per_step_mean", "fit_call_s_per_epoch"]


def _stack_order(s: pd.Series) -> pd.Series:
    return s.map({k: i for i, k in enumerate(STACKS)}) if s.name == "stack" else s


def effect(df: pd.DataFrame, variant: str) -> list[str]:
    """One row per (metric, stack, workload): the median under the default and under ``variant``, their ratio
    variant / default with its 95 % bootstrap interval and exact Mann-Whitney p (3 vs 3 repeats: p >= 0.1)."""
    lines = []
    for metric in METRICS:
        t = compare(df, df, metric, variants=("default", variant))
        for _, r in t.sort_values(["stack", "workload"], key=_stack_order).iterrows():
            ci = "-" if pd.isna(r["ci_low"]) else f"{r['ci_low']:.3f}-{r['ci_high']:.3f}"
            p = "-" if pd.isna(r["p_value"]) else f"{r['p_value']:.2f}"
            lines.append(f"| {r['stack']} | {r['workload']} | {metric} | {variant} | {r[f'a_{metric}']:.4g} | "
                         f"{r[f'b_{metric}']:.4g} | {r['ratio']:.3f} | {ci} | {p} |")
    return lines


def forms(df: pd.DataFrame) -> str:
    """What each record says of its progress reporting, per stack and variant (one line per distinct value)."""
    cols = ["settings.progress", "settings.verbose", "settings.batch_end_hook", "settings.keras_async_batch_end"]
    d = df[["stack", "variant", *cols]].map(lambda v: "-" if pd.isna(v) else str(v)).drop_duplicates()
    names = " | ".join(c.split(".")[1] for c in cols)
    lines = [f"| stack | variant | {names} |", "|" + " --- |" * (2 + len(cols))]
    for _, r in d.sort_values(["stack", "variant"], key=_stack_order).iterrows():
        lines.append(f"| {r['stack']} | {r['variant']} | " + " | ".join(r[c] for c in cols) + " |")
    return "\n".join(lines)


def drift(df: pd.DataFrame) -> str:
    """The machine's drift within the run, per stack: the median over its cells of the last round's ms/step over
    the first's (each repeat's round from ``repeats.schedule``, its value from ``repeats.ms_per_step_mean.values``):
    below 1, the later rounds ran faster, whatever the form."""
    ratios: dict[str, list[float]] = {}
    for _, r in df[df["status"] == "ok"].iterrows():
        rounds = [s.get("round") for s in r["repeats.schedule"]]
        values = dict(zip(rounds, r["repeats.ms_per_step_mean.values"], strict=True))
        if 1 in values and max(rounds) in values and max(rounds) > 1:
            ratios.setdefault(r["stack"], []).append(values[max(rounds)] / values[1])
    lines = ["| stack | cells | ms/step, last round / first (median) |", "| --- | --- | --- |"]
    lines += [f"| {s} | {len(ratios[s])} | {pd.Series(ratios[s]).median():.3f} |" for s in STACKS if s in ratios]
    return "\n".join(lines)


def main(csv: str) -> None:
    df = read_rows(csv)  # the repeats' values as lists
    header = ["| stack | workload | metric | variant | default (keras_tqdm) | variant | ratio | 95 % CI | p |",
              "|" + " --- |" * 9]
    print("## Each form against the default\n")
    print("\n".join(header + [line for v in VARIANTS for line in effect(df, v)]), "\n")
    print("## What each record says\n")
    print(forms(df), "\n")
    print("## The run's drift\n")
    print(drift(df))


if __name__ == "__main__":
    main(sys.argv[1])

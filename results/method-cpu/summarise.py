"""Tables of results/method-cpu/README.md from the two collected runs (python summarise.py hrnn-cpu.csv
verbose-cpu.csv): each variant's effect per stack (``bench.results.compare``, the statistic of ``bench compare``)
and, per record, the 2017 metric (``fit_s_per_epoch``) beside the whole call divided by the epochs."""

from __future__ import annotations

import sys

import pandas as pd

from bench.results.compare import compare
from bench.results.rows import read_rows

STACKS = ["keras2-tf", "keras3-tf", "keras3-jax", "keras3-torch", "pytorch", "jax"]


def effect(df: pd.DataFrame, variant: str, metrics: list[str]) -> str:
    """One row per (stack, workload): median of each metric under default and under ``variant``, and their ratio
    variant / default with its 95 % interval and exact p (3 vs 3 repeats cannot reach p < 0.05)."""
    lines = ["| stack | workload | metric | default | " + variant + " | ratio | 95 % CI | p |", "|" + " --- |" * 8]
    for metric in metrics:
        t = compare(df, df, metric, variants=("default", variant))
        for _, r in t.sort_values(["stack", "workload"], key=lambda s: s.map(
                {k: i for i, k in enumerate(STACKS)}) if s.name == "stack" else s).iterrows():
            ci = "-" if pd.isna(r["ci_low"]) else f"{r['ci_low']:.3f}-{r['ci_high']:.3f}"
            p = "-" if pd.isna(r["p_value"]) else f"{r['p_value']:.2f}"
            lines.append(f"| {r['stack']} | {r['workload']} | {metric} | {r[f'a_{metric}']:.4g} | "
                         f"{r[f'b_{metric}']:.4g} | {r['ratio']:.3f} | {ci} | {p} |")
    return "\n".join(lines)


def forms(df: pd.DataFrame) -> str:
    """The row-LSTM form each record measured, per stack and variant."""
    lines = ["| stack | variant | settings.row_lstm_form | row_lstm_calls_per_forward |", "|" + " --- |" * 4]
    for _, r in df.sort_values(["stack", "variant"]).iterrows():
        lines.append(f"| {r['stack']} | {r['variant']} | {r.get('settings.row_lstm_form')} | "
                     f"{r.get('settings.row_lstm_calls_per_forward')} |")
    return "\n".join(lines)


def metric_2017(df: pd.DataFrame) -> str:
    """Per default record: fit_s_per_epoch (each epoch from its begin to after its validation, averaged), the
    whole fit call / epochs (what the code timed before), their ratio, and the first epoch against the rest."""
    lines = ["| stack | workload | fit_s_per_epoch | fit_call_s / epochs | ratio | fit_epoch_s |", "|" + " --- |" * 6]
    d = df[df["variant"] == "default"]
    for _, r in d.sort_values(["workload", "stack"]).iterrows():
        per = r["metrics.fit_s_per_epoch"]
        whole = r["metrics.fit_call_s"] / r["metrics.epochs"]
        epochs = ", ".join(f"{v:.3g}" for v in r["metrics.fit_epoch_s"])  # a list (read_rows)
        lines.append(f"| {r['stack']} | {r['workload']} | {per:.3g} | {whole:.3g} | {per / whole:.3f} | {epochs} |")
    return "\n".join(lines)


def main(hrnn_csv: str, verbose_csv: str) -> None:
    hrnn, verbose = read_rows(hrnn_csv), read_rows(verbose_csv)  # the repeats' values as lists
    metrics = ["ms_per_step_mean", "fit_s_per_epoch"]
    print("## 1. mnist_hierarchical_rnn: row_lstm=reshape against the default\n")
    print(effect(hrnn, "row_lstm=reshape", metrics), "\n")
    print(forms(hrnn[hrnn["stack"].str.startswith("keras")]), "\n")
    print("## verbose=0 against the default (verbose=1)\n")
    print(effect(verbose, "verbose=0", metrics), "\n")
    print("## 3. fit_s_per_epoch against the whole call / epochs (default cells of both runs)\n")
    print(metric_2017(pd.concat([hrnn, verbose])))


if __name__ == "__main__":
    main(*sys.argv[1:3])

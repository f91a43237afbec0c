"""The Method section: how the run's numbers were taken, read from its records only.

Timing cadence, order (rounds, seed) and drift between the first and last round, TF32 and compile/jit
settings per stack, data source, and the correctness gate (``correctness_flags``). Nothing here is
hand-written: a line appears only when the CSV's columns back it.
"""

from __future__ import annotations

from typing import Any

from bench.results.compare import INPUTS, with_inputs
from bench.results.report.common import json_list, md_table
from bench.results.schema import HOST_PIDS, Data, Env, Metrics, Process, Record, Telemetry, col, setting_col, spread_col

HISTORY_LOSS, HISTORY_VAL_ACC = col(Record, "history", "loss"), col(Record, "history", "val_accuracy")
N_VAL = col(Data, "n_val")

#: Correctness gate: a stack's final validation accuracy may be this far (absolute) from the median of the
#: stacks on the same workload and task before it is flagged, at least (``accuracy_band`` widens it where the
#: validation set is small). Full size, real data only: smoke and synthetic runs do not learn the published task.
#: keras #20713 (torch backend < 90 % on MNIST where TF/JAX reach 98-99 %) is the kind of gap it is there to catch.
ACCURACY_TOLERANCE = 0.02
#: The band's z: two-sided 0.1 % per comparison (Phi^-1(0.9995) = 3.29), so that a report of up to ~50 rows
#: compared (Bonferroni: 50 x 0.1 % = 5 %) flags a healthy row by test-set sampling alone with < 5 % chance.
ACCURACY_Z = 3.29


def accuracy_band(median: float, n_val: float | None) -> float:
    """How far (absolute, fraction) a row's final val_accuracy may be from the stacks' ``median`` on a validation
    set of ``n_val`` examples: ``max(ACCURACY_TOLERANCE, ACCURACY_Z * sqrt(2 p (1 - p) / n_val))`` with p the
    median. The square root is the standard error of the difference of two accuracies measured on ``n_val``
    examples each with the same true accuracy p (the pooled two-proportion z test: Wikibooks, Statistics/Testing
    Data/z-testsprop2), taking the two models' errors as independent: the widest case, since two models scored
    on the same examples err on correlated ones. bAbI qa2 (1k) has 1000 test questions
    (research.facebook.com/downloads/babi: "1000 questions for training, and 1000 for testing"; ``data.n_val``),
    so at p = 0.35 the band is +-7.0 points where 2 points flagged rows that learned. MNIST (10000 test images:
    0.5 points at p = 0.99) keeps the 2-point floor; CIFAR-10 (10000 at p = 0.75: 2.01) is at it. ``ACCURACY_TOLERANCE``
    alone where ``n_val`` is unknown (records without ``data.n_val``)."""
    import math

    if not n_val or not math.isfinite(n_val) or n_val <= 0:
        return ACCURACY_TOLERANCE
    p = min(max(median, 0.0), 1.0)
    return max(ACCURACY_TOLERANCE, ACCURACY_Z * math.sqrt(2 * p * (1 - p) / n_val))


def _col(df, name: str):
    """Column ``name`` as text, empty where the CSV has no such column (older records)."""
    import pandas as pd

    return df[name].astype(str) if name in df.columns else pd.Series("", index=df.index)


def _number(v: Any) -> float | None:
    """``v`` as a float; None where the CSV cell is empty, NaN or not a number."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def correctness_flags(df) -> list[dict[str, Any]]:
    """Fit cells whose model did not learn like the others'.

    Per ok ``fit`` row: ``loss`` did not fall (last epoch's training loss >= the first's, any size), or
    (``full`` size, real data, at least 3 stacks) its final ``val_accuracy`` is more than
    ``accuracy_band`` (its validation set's size, ``data.n_val``: binomial noise, 2 points at least) from the
    median of the stacks on the same suite, workload, variant, batch and inputs (``inputs_of``: a 3-epoch cell is
    never held to the 12-epoch cells' accuracy).

    Returns:
        One dict per flag: stack, workload, variant, size, inputs (its cell id's, ``inputs_of``: '' for none; a flag
        on the batch-64 cell is not one on the default cell), check (``loss did not fall`` / ``val_accuracy``), value,
        and for accuracy the median it was compared with and the band (``+-x.xxxx``).
    """
    if HISTORY_LOSS not in df.columns:
        return []
    fit = with_inputs(df[(df["status"] == "ok") & (_col(df, "task") == "fit")])
    flags: list[dict[str, Any]] = []
    for _, r in fit.iterrows():
        loss = json_list(r.get(HISTORY_LOSS))
        if loss and len(loss) >= 2 and not loss[-1] < loss[0]:
            flags.append({"stack": r["stack"], "workload": r["workload"], "variant": r["variant"],
                          "size": r.get("size"), "inputs": r[INPUTS], "check": "loss did not fall",
                          "value": f"{loss[0]:.4g} -> {loss[-1]:.4g}"})
    for median, group in accuracy_groups(fit):
        for _, r in group.iterrows():
            acc = r["final_val_acc"]
            band = accuracy_band(median, _number(r.get(N_VAL)))
            if acc is not None and abs(acc - median) > band:
                flags.append({"stack": r["stack"], "workload": r["workload"], "variant": r["variant"],
                              "size": r.get("size"), "inputs": r[INPUTS], "check": "val_accuracy",
                              "value": f"{acc:.4f}", "median": f"{median:.4f}", "band": f"+-{band:.4f}"})
    return flags


def accuracy_groups(fit) -> list[tuple[float, Any]]:
    """The groups of ok fit rows ``fit`` the accuracy check compares: full size, real data, the same suite, workload,
    variant, batch and inputs (``bench.results.compare.with_inputs``), at least 3 of them with a final
    ``history.val_accuracy``; each as (the median of their final val_accuracy, the group's rows with it in
    ``final_val_acc``)."""
    import numpy as np

    if HISTORY_VAL_ACC not in fit.columns:
        return []
    full = with_inputs(fit[(_col(fit, "size") == "full") & (_col(fit, col(Data, "source")) == "real")])
    full["final_val_acc"] = full[HISTORY_VAL_ACC].map(lambda v: (json_list(v) or [None])[-1])
    out = []
    for _, group in full.groupby(["suite", "workload", "variant", "batch_size", INPUTS], dropna=False):
        accs = group["final_val_acc"].dropna()
        if accs.size >= 3:
            out.append((float(np.median(accs)), group))
    return out


def _gate_read(fit) -> tuple[int, bool]:
    """How many of the ok fit rows ``fit`` the correctness gate read (a training loss of two epochs or more for the
    loss check, or a place in an ``accuracy_groups`` group), and whether the accuracy check had a group."""
    read = fit[HISTORY_LOSS].map(lambda v: len(json_list(v) or []) >= 2) if HISTORY_LOSS in fit.columns \
        else fit.index.to_series().map(lambda _: False)
    groups = accuracy_groups(fit)
    for _, group in groups:  # the rows of a group with a final val_accuracy: the check skips the others
        read[group.index[group["final_val_acc"].notna()]] = True
    return int(read.sum()), bool(groups)


#: Where each repeat of a cell ran: per repeat, in repeat order, its record's round and position
#: (``bench.results.repeats.aggregate``); the drift reads the round from here, never from the repeat's index.
REPEAT_ROUNDS = col(Record, "repeats", "schedule")


def repeat_rounds(schedule: Any, n: int) -> list[int] | None:
    """The round each of a cell's ``n`` repeats ran in, in repeat order, from its ``repeats.schedule`` cell
    ``schedule``; None where the cell does not say it of every repeat (records from before the field, a repeat
    reused from a run outside rounds: its record has no ``schedule``)."""
    entries = json_list(schedule)
    if entries is None or len(entries) != n:
        return None
    rounds = [e.get("round") if isinstance(e, dict) else None for e in entries]
    known = [r for r in rounds if isinstance(r, int) and not isinstance(r, bool)]
    return known if len(known) == n else None


def _repeat_drifts(df) -> list[tuple[str, list[int] | None, float | None]]:
    """Per ok row of ``df`` run in rounds (``schedule.seed``) with two repeats' mean ms/step or more: (stack, the
    round each repeat ran in, ``repeat_rounds``, and its last recorded round's value over its first: None where the
    rounds are not recorded, all one, or the first value is 0)."""
    values, seed = spread_col("ms_per_step_mean", "values"), col(Record, "schedule", "seed")
    if values not in df.columns or seed not in df.columns:
        return []
    out = []
    for _, r in df[(df["status"] == "ok") & df[seed].notna()].iterrows():
        ms = json_list(r[values]) or []
        if len(ms) < 2:
            continue
        rounds = repeat_rounds(r.get(REPEAT_ROUNDS), len(ms))
        first, last = (ms[rounds.index(min(rounds))], ms[rounds.index(max(rounds))]) if rounds else (0, 0)
        ratio = last / first if rounds and first and min(rounds) < max(rounds) else None
        out.append((r["stack"], rounds, ratio))
    return out


def round_drift(df) -> list[tuple[str, int, float]]:
    """Per stack with several rounds: (stack, cells, median of last round's / first round's mean ms/step).

    A value far from 1 means the machine drifted during the run (or the cells vary a lot run to run); with
    rounds in a shuffled order the drift falls on every stack, so compare the stacks' ratios too. Only rows run in
    rounds (``schedule.seed``), each repeat in the round its record says (``repeat_rounds``): repeats run back to
    back (``bench run --repeats`` without ``--round``) are one cell's minutes, not the run's first and last
    rounds, and a cell that does not say where each repeat ran is left out (``undated_cells``).
    """
    import numpy as np

    ratios: dict[str, list[float]] = {}
    for stack, _, ratio in _repeat_drifts(df):
        if ratio is not None:
            ratios.setdefault(stack, []).append(ratio)
    return [(stack, len(found), float(np.median(found))) for stack, found in sorted(ratios.items())]


def undated_cells(df) -> dict[str, int]:
    """Per stack, the ok cells of ``df`` run in rounds with several repeats whose record does not say which round
    each repeat ran in (``repeat_rounds`` None): the drift is not checked on them."""
    counts: dict[str, int] = {}
    for stack, rounds, _ in _repeat_drifts(df):
        if rounds is None:
            counts[stack] = counts.get(stack, 0) + 1
    return dict(sorted(counts.items()))


#: Rows that break a rule of a valid GPU measurement: (column, what it means).
#: The GPU-busy rule's field: the other processes NVML counted as the cell started (whose: ``SEEN_FROM``).
PROCESSES = col(Record, "gpu_before", "processes")
RULES = ((PROCESSES, "GPU busy: another process was on the GPU"),
         (col(Env, "gpu", "mig_mode"),
          "MIG mode: a GPU slice, while power and energy are the whole GPU's (no datasheet MFU)"),
         (col(Telemetry, "throttled"), "throttled: thermal or hardware clock-event reasons in the timed window"),
         (col(Process, "host_contended"), "CPU contended: other processes kept half a CPU or more busy while the "
                                          "cell ran (process.other_cpu_s)"))


def _set(value: Any) -> bool:
    """True for a true flag or a positive count (a CSV cell: bool, number or their text; NaN is unset)."""
    text = str(value).lower()
    if text == "true":
        return True
    try:
        return float(text) > 0
    except ValueError:
        return False


def rule_breaks(df) -> list[tuple[str, list[str]]]:
    """Per rule of ``RULES`` that some ok row breaks: (what it means, ["stack workload variant", ...])."""
    ok = df[df["status"] == "ok"]
    out = []
    for column, meaning in RULES:
        if column not in ok.columns:
            continue
        hit = ok[ok[column].map(_set)]
        if not hit.empty:
            out.append((meaning, [f"{r.stack} {r.workload} {r.variant}" for r in hit.itertuples()]))
    return out


#: Whose processes ``gpu_before.processes`` counted (``bench.instruments.gpu_state.seen_from``): inside a
#: container's own PID namespace NVML lists none of another tenant's, so a zero there does not keep "GPU busy".
SEEN_FROM = col(Record, "gpu_before", "seen_from")


def _rule_name(meaning: str) -> str:
    return meaning.split(":", 1)[0]


def _checked(ok, column: str):
    """The ok rows ``ok`` whose record lets a rule on ``column`` be checked (a boolean Series): the field is
    recorded, and for the GPU-busy count it was taken in the host's PID namespace (``SEEN_FROM``; not a
    container's own, not unknown, not an older record that did not say); a row that breaks the rule always."""
    import pandas as pd

    if column not in ok.columns:
        return pd.Series(False, index=ok.index)
    mask = ok[column].notna()
    if column == PROCESSES:
        mask &= (ok[SEEN_FROM].astype(str) == HOST_PIDS) if SEEN_FROM in ok.columns else False
    return mask | ok[column].map(_set)  # a row that breaks the rule was checked, whoever counted


def _needs(column: str) -> str:
    """What a record must hold for the rule on ``column`` to be checked, for the "Not checked" line."""
    if column == PROCESSES:
        return f"`{column}` counted in the host's PID namespace, `{SEEN_FROM}`"
    return f"`{column}`"


def _rules_lines(df) -> list[str]:
    """The Method's lines on ``RULES``: the rows that break one, else the rules checked and kept; the rules checked
    on some rows only (with how many); then the rules no ok row lets us check (``_checked``: a field older records
    lack, a GPU's on a CPU run, a GPU-busy count taken inside a container's PID namespace): such a rule was not
    checked, so no line may say it was kept."""
    breaks, ok = rule_breaks(df), df[df["status"] == "ok"]
    counts = {column: int(_checked(ok, column).sum()) for column, _ in RULES}
    unchecked = [(_rule_name(meaning), _needs(column)) for column, meaning in RULES if not counts[column]]
    checked = [(_rule_name(meaning), _coverage(counts[column], len(ok))) for column, meaning in RULES
               if counts[column]]
    if breaks:
        lines = ["- **Rows that break a rule** (their numbers are not comparable with the others'):",
                 *(f"  - {meaning}: {', '.join(rows)}" for meaning, rows in breaks)]
        partial = [name + cover for name, cover in checked if cover]
        if partial:
            lines.append(f"- Checked on some rows only: {', '.join(partial)}.")
    else:
        lines = [f"- No row broke a rule (checked: {', '.join(n + c for n, c in checked)})."] if checked else []
    if unchecked:
        lines.append("- Not checked, no record lets us: " + ", ".join(f"{name} ({need})" for name, need in unchecked))
    return lines


def _coverage(n: int, rows: int) -> str:
    """`` (N of M rows)`` where only ``n`` of the ``rows`` ok rows let a rule be checked (``_checked``: older records
    beside newer ones, counts from a container's PID namespace), '' where all do: a rule checked on some rows is not
    kept by the others."""
    return "" if n == rows else f" ({n} of {rows} rows)"


def _counts(df, column: str) -> str:
    if column not in df.columns or df[column].isna().all():
        return "not recorded"
    counts = df[column].astype(str).value_counts()
    return ", ".join(f"`{k}` {n}" for k, n in sorted(counts.items()))


def _per_stack(df, cols: tuple[str, ...]) -> list[str]:
    lines = []
    for stack, rows in df.groupby("stack", sort=True):
        parts = []
        for column in cols:
            if column in rows.columns and rows[column].notna().any():
                vals = sorted({str(v) for v in rows[column].dropna()})
                parts.append(f"{column.removeprefix('settings.')} {', '.join(vals)}")
        if parts:
            lines.append(f"  - {stack}: {'; '.join(parts)}")
    return lines


def method_section(df) -> list[str]:
    """Markdown lines of the Method section for the run in ``df`` (empty when it has no ok cell)."""
    ok = df[df["status"] == "ok"]
    if ok.empty:
        return []
    lines = ["## Method", "", "Read from this run's records (README, \"How timing works\").", ""]
    lines.append("- Timing cadence (`settings.sync`: where the timer waits for the device): "
                 + _counts(ok, setting_col("sync")))
    if col(Metrics, "ms_per_step_basis") in ok.columns:
        lines.append(f"- Spread (p50/p90) over: {_counts(ok, col(Metrics, 'ms_per_step_basis'))}")
    lines.append(order_line(ok))
    drift, undated = round_drift(ok), undated_cells(ok)
    if drift:
        lines.append("- Drift, last round's / first round's mean ms/step (median over a stack's cells): "
                     + ", ".join(f"{s} {ratio:.3f} ({n} cells)" for s, n, ratio in drift))
    if undated:
        lines.append("- Drift not checked on " + ", ".join(f"{s} ({n} cells)" for s, n in undated.items())
                     + f": their records do not say which round each repeat ran in (`{REPEAT_ROUNDS}`)")
    math = _per_stack(ok, tuple(map(setting_col, ("tf32", "tf32_matmul", "tf32_conv", "tf32_rnn"))))
    if math:  # older records (before the per-op fields) have none
        lines += ["- Math mode per stack: the `tf32` knob (default: each framework's shipped mode, as the sources "
                  "ran; off: strict FP32; on: TF32 everywhere) and whether float32 matmuls and convolutions could "
                  "use TF32 in effect (`settings.tf32_matmul`, `tf32_conv`, `tf32_rnn`; never on a CPU):", *math]
    per_stack = _per_stack(ok, (setting_col("jit_compile"), setting_col("compile"), setting_col("precision")))
    if per_stack:
        lines += ["- Compile and precision settings in effect, per stack:", *per_stack]
    synthetic = (_col(ok, col(Data, "source")) == "synthetic").any()
    lines.append(f"- Data (`data.source`): {_counts(ok, col(Data, 'source'))}"
                 + (" (synthetic rows do not measure the published task)" if synthetic else ""))
    return lines + _rules_lines(df) + correctness_lines(df, ok) + [""]


def order_line(ok) -> str:
    """The Method's line on the order cells ran in: rounds and each order rule from the ``schedule`` columns of the
    ok rows ``ok`` (records before rounds have none): ``shuffled`` with its seed, or ``abba``, whose order no seed
    shuffles (``bench.core.rounds.order``); a record without ``schedule.order_rule`` is from before the rule was
    recorded, when every round was shuffled. Rows run outside rounds beside others are counted."""
    seed, n_rounds = col(Record, "schedule", "seed"), col(Record, "schedule", "rounds")
    if seed not in ok.columns or not ok[seed].notna().any():
        return "- Order: not run in rounds (no `schedule` in the records)"
    scheduled = ok[ok[seed].notna()]
    rules = _col(scheduled, col(Record, "schedule", "order_rule"))
    orders = sorted({_order_text(rule, int(s)) for rule, s in zip(rules, scheduled[seed], strict=True)})
    rounds = sorted({int(s) for s in scheduled[n_rounds].dropna()}) if n_rounds in scheduled else []
    outside = len(ok) - len(scheduled)
    return (f"- Order: {', '.join(map(str, rounds)) or 'n/a'} round(s), every stack once per round in "
            f"{'; '.join(orders)} (`schedule.*` in each row)"
            + (f"; {outside} row(s) not run in rounds (no `schedule`)" if outside else ""))


def _order_text(rule: str, seed: int) -> str:
    """How one order rule ran its rounds (``rule``: a ``schedule.order_rule`` cell as text, '' or 'nan' where the
    record has none, from before ``abba``)."""
    if rule == "abba":
        return "the abba order (two stacks: AB, BA, BA, AB, ...; no seed)"
    return f"an order shuffled with seed {seed}"


def correctness_lines(df, ok) -> list[str]:
    """The Method's correctness gate: the rule, then a table of the rows of ``df`` it flags (``correctness_flags``)
    or a line saying none was, and how many ok fit rows it could not check (no loss of two epochs: a paper step
    cell, a one-epoch run); ``ok``: ``df``'s ok rows. A check no row allowed is named as not applied, never as kept."""
    flags = correctness_flags(df)
    fit = ok[_col(ok, "task") == "fit"]
    checked, accuracy = _gate_read(fit)
    lines = [f"- Correctness gate: every fit row's training loss must fall; at full size on real data, final "
             f"val_accuracy within {ACCURACY_TOLERANCE:.0%} (absolute) of the stacks' median, or within "
             f"{ACCURACY_Z} standard errors of the difference of two accuracies on `data.n_val` examples "
             "where that is wider (binomial test-set noise: 1000-question bAbI)"
             + ("" if accuracy or not checked else " (no 3 full-size real-data fit rows of one workload, variant, "
                "batch and inputs here: only the loss check applied)")]
    if not checked and not accuracy:
        return lines + [f"- Not checked: none of the {len(fit)} ok fit row(s) records a training loss of two epochs "
                        "or more (`history.loss`)."]
    if len(fit) > checked:
        lines.append(f"- {len(fit) - checked} of the {len(fit)} ok fit rows were not checked: no training loss of two "
                     "epochs or more (`history.loss`), and no accuracy group of three.")
    if not flags:
        return lines + ["- No row flagged."]
    head = ["stack", "workload", "variant", "inputs", "check", "value", "median", "band"]
    lines += ["", *md_table(head, ([f.get(k, "") for k in head] for f in flags))]
    return lines + ["", "**Speed numbers of flagged rows stand beside a model that did not learn like the others'.**"]

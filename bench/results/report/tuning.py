"""The tuning study's section (MNIST CNN on an RTX 4060 Ti): per stack out-of-the-box vs best, the grid
beside the reference's published times, the study's findings checked on our data, and plots."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bench.core import reference
from bench.core.knobs import KNOBS, normalise, variant_name
from bench.core.reference import tuning_study
from bench.core.stacks import STACKS, get_stack
from bench.results.compare import with_inputs
from bench.results.report.common import REFERENCE_STACKS, Footnotes, _num, fmt, fmt_beside, json_list, md_table
from bench.results.rows import present
from bench.results.schema import Data, Metrics, Record, Telemetry, col, setting_col

GPU_UTIL, POWER = col(Telemetry, "gpu_util_pct", "mean"), col(Telemetry, "power_w", "mean")
J_EPOCH, P50 = col(Metrics, "j_per_epoch"), col(Metrics, "ms_per_step_p50")

REFERENCE_CSV = "mnist_cnn_tuning_4060ti.csv"
#: The study's run, from the header of ``REFERENCE_CSV``: the model, the whole of MNIST's 60,000 training images,
#: 41 epochs of batch 256 on a GPU, timed as whole epochs (our ``sync=epoch``); tf.data shuffled from the post's
#: buffer of 20,000 (``tuning_study.TF_DATA_SHUFFLE_BUFFER``, from its text). A row is paired with a published
#: time only when it ran all of these (``study_mismatch``).
STUDY = {"workload": "mnist_cnn_tuning", "size": "full", "device": "gpu", "batch_size": 256, col(Metrics, "epochs"): 41,
         col(Data, "source"): "real", col(Data, "n_train"): 60000, setting_col("sync"): "epoch"}
#: PyTorch pipelines through a ``DataLoader``, paired only with PyTorch's defaults (both False): the post's "standard
#: parameters" for its tensor datasets (``tuning_study.LOADER_STATED_FOR``); for the torchvision pipeline (0 and 6
#: workers) the post states no options, so PyTorch's defaults are assumed (``pairing_note`` says so).
STUDY_LOADER_PIPELINES = ("tensor_dataset", "torchvision_dataset_transforms")
STUDY_LOADER_OPTIONS = {"pin_memory": False, "persistent_workers": False}


# ---- the reference's published tuning times -------------------------------------------------------

def reference_settings(row: dict[str, str]) -> list[tuple[dict[str, Any], float]]:
    """(settings, published seconds for 41 epochs) pairs of one reference row; a PyTorch
    tensor_dataset row gives a second pair for its time_preload_s column (preload=True)."""
    stack = REFERENCE_STACKS.get(row["stack"])
    if stack is None:
        return []
    engine = get_stack(stack).family
    if engine == "keras":
        jit = {"false": False, "true": True, "auto": "auto"}[row["jit"]]
        s = {"data_pipeline": row["data_pipeline"], "steps_per_execution": int(row["steps_per_execution"]),
             "jit_compile": jit, "precision": row["precision"]}
    else:
        s = {"data_pipeline": row["data_pipeline"],
             "num_workers": int(row["num_workers"] or 0), "compile": row["jit"], "precision": row["precision"],
             "grad_scaler": row["grad_scaler"] == "true",
             # the study's set_float32_matmul_precision("high") is our tf32=on (cuDNN's TF32 is on by default)
             "tf32": "on" if row["matmul_precision"] in ("high", "medium") else "default"}
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


def _same(value, expected) -> bool:
    if isinstance(expected, int) and not isinstance(expected, bool):
        return _num(value) == expected
    return value == expected


def _shown(value) -> str:
    """A CSV value in a sentence: 'not recorded' when missing, integral floats as integers."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "not recorded"
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def study_mismatch(row) -> str | None:
    """Why a tuning row's run differs from the study's beyond its knobs (None: it ran the study's settings).

    Checks ``STUDY`` (model, size, device, batch, epochs, real data and its size, timing cadence), and for a
    tf.data pipeline the shuffle buffer (``tuning_study.TF_DATA_SHUFFLE_BUFFER``), for a PyTorch ``DataLoader`` its
    options as they took effect (``STUDY_LOADER_OPTIONS``). A column the CSV lacks (a record from before it was
    written) is a mismatch: nothing unrecorded is assumed to match.
    """
    for column, expected in STUDY.items():
        value = row.get(column)
        if not _same(value, expected):
            return f"{column}={_shown(value)}"
    buffer = row.get(setting_col("shuffle_buffer"))
    if row.get(setting_col("data_pipeline")) in ("tf_data_numpy", "tf_data_tensors") and \
            not _same(buffer, tuning_study.TF_DATA_SHUFFLE_BUFFER):
        return f"{setting_col('shuffle_buffer')}={_shown(buffer)}"
    if row.get(setting_col("data_pipeline")) in STUDY_LOADER_PIPELINES:
        for knob, expected in STUDY_LOADER_OPTIONS.items():
            value = row.get(setting_col(knob))
            if not (isinstance(value, (bool, np.bool_)) and value == expected):
                return f"{setting_col(knob)}={_shown(value)}"
    return None


def _final_loss(row) -> float | None:
    vals = json_list(row.get(col(Record, "history", "loss")))
    return float(vals[-1]) if vals else None


def tuning_frame(df):
    """The tuning suite's rows of ``df`` with ``time_s`` (whole training, s), the last epoch's training loss
    (``final_loss``), ``inputs`` (the inputs its cell id names off their defaults, ``inputs_of``: ``batch_size=1024``;
    '' for none) and ``configuration`` (its variant, with those inputs: what the tables and plots name it by), and
    for a row with a published counterpart (same stack and knobs: ``reference_times``)
    either the published time (``reference_time_s``, when the row ran the study's settings) or why not
    (``reference_mismatch``, ``study_mismatch``): a time of another run beside ours would mislead."""
    rows = df[df["suite"] == "tuning"].copy()
    if rows.empty:
        return rows
    ref = reference_times()
    rows["time_s"] = rows.get(col(Metrics, "total_train_s"))
    published = [ref.get((s, v)) for s, v in zip(rows["stack"], rows["variant"], strict=True)]
    why = [study_mismatch(r) if p is not None else None for p, (_, r) in zip(published, rows.iterrows(), strict=True)]
    rows["reference_time_s"] = [p if w is None else None for p, w in zip(published, why, strict=True)]
    rows["reference_mismatch"] = why
    rows["final_loss"] = [_final_loss(r) for _, r in rows.iterrows()]
    rows = with_inputs(rows)
    rows["configuration"] = [f"{v}, {i}" if i else str(v) for v, i in zip(rows["variant"], rows["inputs"], strict=True)]
    return rows


def pairing_note(rows) -> str:
    """The sentence under the tuning section's intro that says which rows carry a published time, and why the
    others with a published counterpart do not (the first reason, with how many rows share it)."""
    study = ", ".join(f"{k}={v}" for k, v in STUDY.items())
    options = ", ".join(f"{k}={v}" for k, v in STUDY_LOADER_OPTIONS.items())
    assumed = [p for p in STUDY_LOADER_PIPELINES if p not in tuning_study.LOADER_STATED_FOR]
    text = (f"Reference times are paired only with rows that ran the study's settings ({study}; tf.data shuffle "
            f"buffer {tuning_study.TF_DATA_SHUFFLE_BUFFER:,}; PyTorch DataLoader {options}: the post's standard "
            f"parameters for {', '.join(tuning_study.LOADER_STATED_FOR)}, assumed (PyTorch's defaults) for "
            f"{', '.join(assumed)}, whose options the post does not state) and the same knobs (the variant).")
    why = rows["reference_mismatch"].dropna() if "reference_mismatch" in rows else None
    if why is not None and len(why):
        counts = why.value_counts()
        text += (f" {len(why)} row(s) with a published counterpart are not paired: "
                 + "; ".join(f"{reason} ({n})" for reason, n in counts.items()) + ".")
    return text


def _col(r, name):
    return r[name] if name in r.index else None


def as_bool(v) -> bool | None:
    """A CSV boolean (True/False, 'True'/'False'); None when missing."""
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v in ("True", "False"):
        return v == "True"
    return None


def tuning_section(rows, notes: Footnotes, plots: dict[str, str]) -> list[str]:
    """The tuning study's section: per stack out-of-the-box vs best time, the grid beside the published
    times, the study's findings checked on our rows, and the plots (``plots``: title -> link)."""
    if rows.empty:
        return []
    out = ["## Tuning study (MNIST CNN)", "",
           "Time = training steps of all epochs, compilation included, validation excluded (the study's "
           "whole-training seconds). Reference = the published time on an RTX 4060 Ti (other hardware: "
           "compare shapes, not absolute values). J/epoch from the NVML energy counter.", "",
           pairing_note(rows), "",
           "### Out of the box vs best, per stack", "", *md_table(BEST_HEAD, _best_rows(rows, notes)), "",
           "### Full grid", "", *md_table(GRID_HEAD, _grid_rows(rows, notes))]
    caveat = (" (CPU smoke run: says nothing about GPUs)" if (rows["device"] == "cpu").any() else "")
    out += ["", f"### What the study found, checked on our data{caveat}", "", *findings(rows), ""]
    for title, name in plots.items():
        out.append(f"![{title}]({name})")
    return out + [""]


#: The columns of the tuning section's two tables.
BEST_HEAD = ["stack", "out-of-the-box", "time (s)", "best configuration", "time (s)", "speedup", "GPU util %",
             "power W", "J/epoch", "final loss"]
GRID_HEAD = ["stack", "configuration", "status", "time (s)", "reference (s)", "ms/step p50", "GPU util %", "power W",
             "J/epoch", "throttled"]


def _best_rows(rows, notes: Footnotes) -> list[list[str]]:
    """Per stack (in ``STACKS`` order) and inputs (``tuning_frame``'s ``inputs``: a batch-1024 run is never the best of
    the batch-256 one's) its out-of-the-box row and fastest ok row (``BEST_HEAD``); ``n/a`` throughout for one without
    an ok row. A baseline that is not ok lands in ``notes``."""
    out = []
    for stack, inputs, g in ((s, i, g) for s in STACKS if s in set(rows["stack"])
                             for i, g in rows[rows["stack"] == s].groupby("inputs", sort=True)):
        sid = f"{stack} ({inputs})" if inputs else stack
        ok = g[g["status"] == "ok"].dropna(subset=["time_s"])
        base = g[g["baseline"].map(as_bool) == True]  # noqa: E712  (pandas column comparison)
        if ok.empty:
            out.append([sid, *["n/a"] * (len(BEST_HEAD) - 1)])
            continue
        best = ok.loc[ok["time_s"].idxmin()]
        b = base.iloc[0] if not base.empty else None
        b_time = _num(b["time_s"]) if b is not None and b["status"] == "ok" else None
        speed = f"{b_time / best['time_s']:.2f}x" if b_time else "n/a"
        if b is None:
            b_name, b_text = "n/a", "n/a"
        else:
            b_name, b_text = b["variant"], fmt(b_time) if b["status"] == "ok" else notes.ref(b)
        out.append([sid, b_name, b_text, best["variant"], fmt(best["time_s"]), speed, fmt(_col(best, GPU_UTIL)),
                    fmt(_col(best, POWER)), fmt(_col(best, J_EPOCH)), fmt(best["final_loss"], 4)])
    return out


def _grid_rows(rows, notes: Footnotes) -> list[list[str]]:
    """Every tuning row (by stack, then variant) as a line of the full grid (``GRID_HEAD``); a row that is not ok
    lands in ``notes``."""
    out = []
    for _, r in rows.sort_values(["stack", "variant", "inputs"]).iterrows():
        status = "ok" if r["status"] == "ok" else notes.ref(r)
        throttled = as_bool(_col(r, col(Telemetry, "throttled")))
        thr = "n/a" if throttled is None else "yes" if throttled else "no"
        name = f"{r['configuration']}{' (baseline)' if as_bool(r['baseline']) else ''}"
        out.append([r["stack"], name, status, fmt(r["time_s"]), fmt(r["reference_time_s"]), fmt(_col(r, P50), 2),
                    fmt(_col(r, GPU_UTIL)), fmt(_col(r, POWER)), fmt(_col(r, J_EPOCH)), thr])
    return out


def findings(rows) -> list[str]:
    """Sentences that say, from our data, whether two of the study's findings hold."""
    ok = rows[(rows["status"] == "ok") & rows["time_s"].notna()]
    keras = ok[ok["stack"].map(lambda s: get_stack(s).family == "keras")]
    return [steps_per_execution_finding(keras), mixed_jit_finding(ok[ok["stack"] == "keras3-tf"])]


#: What a row of the steps_per_execution finding is paired on besides the Keras knobs in effect: the same cell but
#: for its variant (``Cell.id``'s fields and its batch).
SAME_RUN = ("stack", "workload", "task", "size", "device", "batch_size")


#: The steps_per_execution finding holds where the median speed-up of 512 over 1 is above this.
SPE_HOLDS = 1.1


def spe_holds(median: float) -> bool:
    """Whether the steps_per_execution finding holds at ``median`` (time with 1 / time with 512): above
    ``SPE_HOLDS``."""
    return median > SPE_HOLDS


def steps_per_execution_finding(keras) -> str:
    """The finding *steps_per_execution matters a lot for Keras* on the ok Keras rows ``keras``: the median over pairs
    of (time with steps_per_execution 1 / time with 512), each pair two rows of one ``SAME_RUN`` whose settings in
    effect (``settings.<knob>`` for every Keras knob: what the record says took effect, as ``mixed_jit_finding``
    reads it, never the request) differ in steps_per_execution alone, 512 and 1. A row whose record holds no
    steps_per_execution in effect is in no pair; "holds" above a median of ``SPE_HOLDS`` (``spe_holds``). The
    sentence names the steps each call of the 512 rows ran (``settings.steps_per_call``, ``_steps_a_call``): Keras
    ends a call at the epoch's end, so 512 at the study's 235 steps an epoch is one call of 235 steps per epoch, not
    512."""
    claim = "- *steps_per_execution matters a lot for Keras*"
    others = [k for k in KNOBS["keras"] if k != "steps_per_execution"]
    spe = {i: _num(_in_effect(r, "steps_per_execution")) for i, r in keras.iterrows()}
    key = {i: tuple(_effect_key(_col(r, c)) for c in SAME_RUN) + tuple(_effect_key(_in_effect(r, k)) for k in others)
           for i, r in keras.iterrows()}
    pairs, paired = [], []
    for i in [i for i, n in spe.items() if n == 512]:
        twin = next((j for j, n in spe.items() if n == 1 and key[j] == key[i]), None)
        if twin is not None:
            pairs.append(float(keras.at[twin, "time_s"]) / float(keras.at[i, "time_s"]))
            paired.append(_num(_in_effect(keras.loc[i], "steps_per_call")))
    if not pairs:
        return (f"{claim}: no ok pair of runs to judge (two rows of one cell whose records say steps_per_execution "
                "512 and 1 took effect, every other Keras knob in effect the same).")
    med = float(np.median(pairs))
    verdict = "holds" if spe_holds(med) else "does not hold"
    return (f"{claim}: {verdict} here: steps_per_execution 512 ({_steps_a_call(paired)}) trains "
            f"{fmt_beside(med, 2, spe_holds)}x as fast "  # printed on the side of SPE_HOLDS its verdict says
            f"as 1 (median over {len(pairs)} pairs whose other Keras knobs in effect, `settings.*`, are the same).")


def _steps_a_call(ran: list[float | None]) -> str:
    """What the 512 rows' calls ran, from their ``settings.steps_per_call`` (None: not recorded, a record from before
    the field): "235 steps a call: Keras ends a call at the epoch's end" where it was fewer than 512."""
    if not ran or any(n is None for n in ran):
        return "the steps a call ran not recorded: Keras ends a call at the epoch's end"
    values = sorted({int(n) for n in ran if n is not None})
    text = " or ".join(str(n) for n in values) + " steps a call"
    return text + (": Keras ends a call at the epoch's end" if values[0] < 512 else "")


def _effect_key(value) -> str | None:
    """A setting in effect as comparable text: None where not recorded, a number by its value (512 and 512.0 are
    one), a boolean as True or False."""
    if not present(value):
        return None
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    number = _num(value)
    return str(value) if number is None else repr(number)


def mixed_jit_finding(tf) -> str:
    """The finding *mixed precision + jit gives Keras/TF its best time* on the ok keras3-tf rows ``tf``, from the
    fastest one's settings in effect (``settings.precision``, ``settings.jit_compile``: what Keras resolved, as
    ``jit_compile="auto"`` is XLA on a GPU and not on a CPU), never from its request; not judged where the row
    records neither."""
    claim = "- *mixed precision + jit gives Keras/TF its best time*"
    if tf.empty:
        return f"{claim}: no ok keras3-tf run to judge."
    best = tf.loc[tf["time_s"].idxmin()]
    precision, jit = (_in_effect(best, knob) for knob in ("precision", "jit_compile"))
    fastest = (f"the fastest keras3-tf configuration is `{_col(best, 'configuration') or best['variant']}` "
               f"({fmt(best['time_s'])} s)")
    if precision is None or jit is None:
        return f"{claim}: not judged: {fastest}, whose record holds no precision or jit_compile in effect."
    verdict = "holds" if precision == "mixed_float16" and str(jit) == "True" else "does not hold"
    return f"{claim}: {verdict} here: {fastest}, run with precision {precision}, jit_compile {jit} in effect."


def _in_effect(row, knob: str) -> Any:
    """A row's ``settings.<knob>`` (the setting as it took effect), None where the record has none."""
    value = row.get(setting_col(knob))
    return value if present(value) else None

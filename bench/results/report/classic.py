"""The classic suite's section (the 2017 Keras backend comparison): per stack and workload, our ms/step and,
beside it, the source's own metric, seconds per epoch of the whole training call."""

from __future__ import annotations

from typing import Any

from bench.core.stacks import STACKS
from bench.results.compare import INPUTS, with_inputs
from bench.results.report.common import Footnotes, _num, fmt, md_table
from bench.results.report.method import correctness_flags
from bench.results.schema import Data, EffectiveSettings, Metrics, col

#: The sentence under the table's heading: what each number is.
METRICS_NOTE = ("Each cell: ms/step (ours: the mean over the steady epochs' training steps) · s/epoch, the 2017 "
                "comparison's metric (`metrics.fit_call_s_per_epoch`: the whole training call, as its notebooks "
                "timed `model.fit` with `%timeit`, over the epochs: the first epoch's tracing and compilation and "
                "every epoch's validation included; on Keras `fit`'s own setup too, while the PyTorch and Flax "
                "twins' clock starts at their first epoch, after their model, optimizer and data are placed).")
#: The mark of an s/epoch read from a record of schema 3 or older, and its explanation under the table.
LEGACY_MARK = "†"
LEGACY_NOTE = ("†: s/epoch of a record of schema 3 or older (`metrics.fit_s_per_epoch`), whose code computed it "
               "another way: records with `metrics.fit_epoch_s` hold the mean of each epoch's begin-to-validation "
               "span (setup before the first epoch excluded), older ones the whole `fit` call over the epochs")


#: A hierarchical-RNN cell's row-LSTM form in the table (``settings.row_lstm_form``, measured on Keras stacks), and
#: its explanation under it. The PyTorch and Flax twins call their row LSTM once by construction (``build_torch``,
#: ``build_flax`` of ``bench.models.workloads.mnist_hierarchical_rnn.models``: not measured).
ROW_LSTM_LABELS = {"per_row": "row LSTM ×28", "reshape": "row LSTM ×1", "twin": "row LSTM ×1 (twin)",
                   None: "row LSTM form not recorded"}
ROW_LSTM_NOTE = ("row LSTM ×28 / ×1 (mnist_hierarchical_rnn): the calls of the row LSTM per forward pass, measured "
                 "(`settings.row_lstm_form`): ×28 is Keras 3's `TimeDistributed`, one call per image row, 28 x 28 + 28 "
                 "= 812 sequential recurrent steps; ×1 is one call on all B*28 rows, 56 steps, as Keras 2.0.8 ran the "
                 "script and tf.keras still does (on Keras 3: `--set row_lstm=reshape`); (twin): the PyTorch and Flax "
                 "models reshape the rows into the batch by construction (not measured)")


def row_lstm_label(row, stack: str) -> str | None:
    """The row-LSTM form of an ok ``mnist_hierarchical_rnn`` cell for the table (``ROW_LSTM_LABELS``); None for
    another workload. A Keras record without ``settings.row_lstm_form`` (older code) says so."""
    if row.get("workload") != "mnist_hierarchical_rnn":
        return None
    form = row.get(col(EffectiveSettings, "row_lstm_form"))
    if not isinstance(form, str):
        form = "twin" if STACKS[stack].family != "keras" else None
    return ROW_LSTM_LABELS.get(form, f"row LSTM {form}")


def s_per_epoch(row) -> tuple[float | None, bool]:
    """A row's 2017 metric, s/epoch: ``metrics.fit_call_s_per_epoch``, or from a record of schema 3 or older, which
    has only ``metrics.fit_s_per_epoch`` (``LEGACY_NOTE``), that; None where the row has neither. Returns (s/epoch,
    whether the legacy field was read). The report's classic table and the results site both read it here."""
    per_epoch = _num(row.get(col(Metrics, "fit_call_s_per_epoch")))
    if per_epoch is not None:
        return per_epoch, False
    legacy = _num(row.get(col(Metrics, "fit_s_per_epoch")))
    return legacy, legacy is not None


def s_per_epoch_text(row) -> str:
    """``s_per_epoch`` with 2 decimals, ``LEGACY_MARK`` after a legacy value; '' where the row has neither field."""
    value, legacy = s_per_epoch(row)
    return "" if value is None else f"{value:.2f}{LEGACY_MARK if legacy else ''}"


def cell_text(row) -> tuple[str, bool]:
    """An ok row's numbers: ms/step, and ``· <s> s/epoch`` where the record has the 2017 metric
    (``metrics.fit_call_s_per_epoch``), or ``· <s> s/epoch†`` from a record of schema 3 or older (``s_per_epoch``);
    records from before either have ms/step only. Returns (text, whether the legacy field was read)."""
    text = fmt(row.get(col(Metrics, "ms_per_step_mean")), 2)
    value, legacy = s_per_epoch(row)
    if value is None:
        return text, False
    return f"{text} · {value:.2f} s/epoch{LEGACY_MARK if legacy else ''}", legacy


def classic_section(df, notes: Footnotes) -> list[str]:
    """The classic suite's table: ms/step (mean) and the 2017 metric s/epoch per workload and stack, not-ok cells as
    footnotes; a cell the correctness gate flags carries ⚠, a full-size cell on synthetic data (syn), each explained
    below the table."""
    grid = classic_grid(df, notes)
    if grid is None:
        return []
    stacks, rows, marks = grid
    out = ["## Classic suite: ms/step (mean over steady-state steps) · s/epoch (the 2017 metric)", "", METRICS_NOTE, "",
           *md_table(["workload", "task", *stacks], ([label, task, *(text for text, _ in cells)]
                                                    for label, task, cells in rows))]
    return out + [""] + [f"{m}" for m in sorted(marks)] + ([""] if marks else [])


#: A classic table's row: (workload label, task, [(cell text, the row's index in the frame or None)] per stack).
GridRow = tuple[str, str, list[tuple[str, Any]]]


def classic_grid(df, notes: Footnotes) -> tuple[list[str], list[GridRow], set[str]] | None:
    """The classic table's content, for the report's Markdown and the results site alike: (its stack columns, its
    rows as (workload label, task, [(cell text, the row's index in ``df`` or None where no cell ran)] per stack),
    the marks explained under it); None without classic rows."""
    rows = df[df["suite"] == "classic"]
    if rows.empty:
        return None
    stacks = [s for s in STACKS if s in set(rows["stack"])]
    flagged = {(f["stack"], f["workload"], f["size"], f["variant"], f["inputs"]) for f in correctness_flags(rows)}
    marks: set[str] = set()
    out = []
    # one row per variant (a run may hold augment=false or knob variants beside the default): never a row picked
    # from several, nor from cells run with other inputs (their id's suffix, e.g. batch_size=64) or at another size
    rows = with_inputs(rows)
    sizes = rows["size"].nunique(dropna=False) > 1 if "size" in rows.columns else False
    rows = rows.assign(_size=rows["size"].fillna("") if "size" in rows.columns else "")
    for (w, t, size, v, inputs), g in rows.groupby(["workload", "task", "_size", "variant", INPUTS], sort=False):
        cells: list[tuple[str, Any]] = []
        for s in stacks:
            r = g[g["stack"] == s]
            if r.empty:
                cells.append(("-", None))
                continue
            r = r.iloc[0]
            mark = (s, w, r.get("size"), v, inputs) in flagged
            cells.append((notes.ref(r) if r["status"] != "ok" else _ok_text(r, s, mark, marks), r.name))
        label = ", ".join(x for x in (size if sizes else "", v if v != "default" else "", inputs) if x)
        out.append((f"{w} ({label})" if label else w, t, cells))
    return stacks, out, marks


def _ok_text(r, stack: str, flagged: bool, marks: set[str]) -> str:
    """An ok classic cell's text with its marks (†, ⚠, the row-LSTM form, (syn)), each note added to ``marks``."""
    text, legacy = cell_text(r)
    if legacy:
        marks.add(LEGACY_NOTE)
    if flagged:
        text += " ⚠"
        marks.add("⚠: flagged by the correctness gate (Method section): the model did not learn like the others'")
    form = row_lstm_label(r, stack)
    if form:
        text += f" · {form}"
        marks.add(ROW_LSTM_NOTE)
    if r.get("size") == "full" and r.get(col(Data, "source")) == "synthetic":
        text += " (syn)"
        marks.add("(syn): synthetic data, asked for with --data synthetic: not the published task")
    return text

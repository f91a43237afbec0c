"""The Keras 3 benchmark's section (suite ``paper``): Table 2 with ours beside the published A100 value,
throughput and MFU, Figure 1's speedup plot."""

from __future__ import annotations

from typing import Any

from bench.core import reference
from bench.core.gpus import gpu_family, is_mig_name, model_name
from bench.core.knobs import STEP_KNOBS
from bench.core.stacks import STACKS
from bench.results.cell import inputs_of
from bench.results.report.common import REFERENCE_STACKS, Footnotes, _num, fmt, md_table
from bench.results.rows import present
from bench.results.schema import EffectiveSettings, Env, Metrics, Record, col

PAPER_CSV = "keras_io_benchmarks_2024.csv"


def paper_columns(df) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The paper table's stack columns: (Keras stacks, the published ones; other stacks), in ``STACKS``
    order, each a default stack or one that has paper rows in ``df``, whose engine has a step engine (a ``jax``
    stack's paper cells are all unsupported, with that reason, in the records and the CSV)."""
    ran = set(df.loc[df["suite"] == "paper", "stack"]) if {"suite", "stack"} <= set(df.columns) else set()
    shown = [s for s in STACKS.values() if (s.default or s.id in ran) and s.family in STEP_KNOBS]
    return (tuple(s.id for s in shown if s.family == "keras"), tuple(s.id for s in shown if s.family != "keras"))


# ---- the Keras 3 benchmark (suite ``paper``) ------------------------------------------------------------

def published_ms() -> dict[tuple[str, str, int, str], float | None]:
    """(model, task, batch size, stack id) -> published A100 ms/step (None where the source says NA)."""
    return {(r["model"], r["task"], int(r["batch_size"]), REFERENCE_STACKS[r["stack"]]): _num(r["ms_per_step"])
            for r in reference.read_csv(PAPER_CSV)}


def paper_rows(df) -> list[dict[str, Any]]:
    """One entry per published row (model, task, batch) plus one per other row we ran, each with our cell per stack
    (the CSV row or None) and the published value per stack. A cell of another variant (a knob: ``bs32-jit_compile-
    false``) or other inputs (``steps=7``) than the published cell of its (model, task, batch) is a row of its own,
    ``extra`` naming what differs (``_extra``), never picked in place of the published cell or beside it; so is each
    size but ``full`` (the published one) where the run's paper cells are of several (``extra`` then starts with the
    size).

    Each entry: ``model``, ``task``, ``batch``, ``extra`` ('' for the published cell), ``label`` (the model, with
    ``extra`` in brackets), ``ours`` and ``published`` ({stack id: ...}; an ``extra`` row carries its (model, task,
    batch)'s published values, which ``ratio_text`` never divides by: ``source_mismatch`` names the knob or input)."""
    pub = published_ms()
    keys = list(dict.fromkeys((m, t, b, "") for m, t, b, _ in pub))
    ours = df[df["suite"] == "paper"] if "suite" in df.columns else df.iloc[0:0]
    ours = ours.assign(_batch=ours["batch_size"].map(_num) if "batch_size" in ours.columns else None)
    # where the run holds several sizes, each but the published (full) one is a row of its own
    several = "size" in ours.columns and ours["size"].nunique(dropna=False) > 1
    ours = ours.assign(_extra=[", ".join(x for x in (str(r["size"]) if several and r["size"] != "full" else "",
                                                     _extra(r)) if x) for _, r in ours.iterrows()])
    for _, r in ours.iterrows():
        key = (r["workload"], r["task"], int(r["_batch"]) if _num(r["_batch"]) is not None else -1, r["_extra"])
        if key not in keys:
            keys.append(key)
    rows = []
    for m, t, b, extra in keys:
        cells = {}
        for sid in STACKS:
            hit = ours[(ours["workload"] == m) & (ours["task"] == t) & (ours["stack"] == sid)
                       & (ours["_batch"] == b) & (ours["_extra"] == extra)] if not ours.empty else ours
            cells[sid] = hit.iloc[0] if len(hit) else None
        rows.append({"model": m, "task": t, "batch": b, "extra": extra, "label": f"{m} ({extra})" if extra else m,
                     "ours": cells, "published": {sid: pub.get((m, t, b, sid)) for sid in STACKS}})
    return rows


def _extra(row) -> str:
    """What sets a paper row apart from the published cell of its (model, task, batch), '' for that cell: its
    variant past ``bs<batch>`` (``bench.run.scenarios.steps`` names a knob's variant ``bs<batch>-<knob variant>``)
    and its inputs off their defaults but the batch (``inputs_of``: ``steps=7+seq_len=128``), joined by ", "."""
    batch = _num(row.get("batch_size"))
    prefix = f"bs{int(batch)}" if batch is not None else None
    variant = str(row.get("variant") or "")
    if variant in ("default", prefix):
        variant = ""
    elif prefix and variant.startswith(f"{prefix}-"):
        variant = variant[len(prefix) + 1:]
    named = inputs_of(str(row.get(col(Record, "cell_id")) or "")).split("+")
    inputs = "+".join(x for x in named if x and not x.startswith("batch_size="))
    return ", ".join(x for x in (variant, inputs) if x)


def ours_ms(cell) -> float | None:
    """A paper cell's mean ms/step, None when it did not run ok."""
    return _num(cell[col(Metrics, "ms_per_step_mean")]) if cell is not None and cell["status"] == "ok" else None


def source_mismatch(cell) -> list[str]:
    """Why a paper cell (a CSV row) was not run as the source ran it (empty when it was): not full size on a
    GPU, a GPU other than the source's whole A100 (``gpu_mismatch``), a knob override (any
    ``settings_requested.*``: a named variant), timed steps other than the source's 100
    (``benchmark/__init__.py@v0.0.5`` NUM_STEPS), or a sequence length other than the published one (BERT 512,
    Gemma/Mistral fit 128; generate, which reads none, is not compared; a row that should hold one and does not
    is not taken as the published one). The batch is the published one by construction: only published (model,
    task, batch) rows have a published value."""
    from bench.core.reference.keras_benchmarks import NUM_STEPS, SEQ_LENGTH

    why = []
    if cell["device"] != "gpu" or cell["size"] != "full":
        why.append(f"{cell['size']} size on {cell['device']}")
    gpu = gpu_mismatch(cell) if cell["device"] == "gpu" else None
    if gpu:
        why.append(gpu)
    knobs = sorted(str(c).split(".", 1)[1] for c in cell.index
                   if str(c).startswith(col(Record, "settings_requested") + ".") and present(cell[c]))
    if knobs:
        why.append("knob " + ", ".join(knobs))
    steps = _num(cell.get(col(Metrics, "steps")))
    if steps != NUM_STEPS:
        why.append(f"{fmt(steps, 0)} timed steps, not {NUM_STEPS}")
    # generate feeds a fixed prompt to max_length, in the source too: no sequence length to compare
    full_seq = None if cell.get("task") == "generate" else SEQ_LENGTH.get(cell["workload"])
    seq = _num(cell.get(col(EffectiveSettings, "model_config", "seq_len")))
    if full_seq is not None and seq != full_seq:
        why.append(f"sequence length {'not recorded' if seq is None else fmt(seq, 0)}, not {full_seq}")
    return why


def gpu_mismatch(cell) -> str | None:
    """Why a GPU cell's GPU (``env.gpu.name``, ``env.gpu.mig_mode``) is not one the published figures can be divided
    by (``keras_benchmarks.SOURCE_GPU``, an A100-SXM4-40GB), None when it is a whole A100
    (``bench.core.gpus.gpu_family``; any variant, which ``gpu_variant_note`` names): another model, or a MIG slice (a
    fraction of the GPU's SMs), names the GPU that ran."""
    from bench.core.reference.keras_benchmarks import SOURCE_GPU, SOURCE_GPU_FAMILY

    name = _gpu_name(cell)
    if is_mig_name(name) or str(cell.get(col(Env, "gpu", "mig_mode"))).lower() == "true":
        return f"ran on a MIG slice of {name or 'an unnamed GPU'}; the published figures are from {SOURCE_GPU}"
    if gpu_family(name) != SOURCE_GPU_FAMILY:
        return f"ran on {name or 'an unrecorded GPU'}; the published figures are from {SOURCE_GPU}"
    return None


def gpu_variant_note(cell) -> str | None:
    """For a cell with a ratio on a whole A100 other than the source's A100-SXM4-40GB (the 80GB boards have more
    memory bandwidth, the PCIe ones a lower power limit): the variant that ran and the source's, to stand beside the
    ratio. None on the source's variant (``bench.core.gpus.model_name``: with or without NVML's vendor prefix)."""
    from bench.core.reference.keras_benchmarks import SOURCE_GPU_NAME

    name = _gpu_name(cell)
    if name is None or model_name(name) == model_name(SOURCE_GPU_NAME):
        return None
    return f"ran on {name}; the source's was an {SOURCE_GPU_NAME}"


def _gpu_name(cell) -> str | None:
    """The cell's ``env.gpu.name``, None when not recorded."""
    name = cell.get(col(Env, "gpu", "name"))
    return str(name) if present(name) else None


def best_keras3(values: dict[str, float | None]) -> tuple[str | None, float | None]:
    """The fastest of the Keras 3 stacks the source published (``Stack.reference``: the three backends at their
    pinned versions) in ``values`` (stack id -> ms/step) and its value; (None, None) without one. The published best
    is over those three, so ours is too: a version stack (another Keras, ``make version-stack``) or another stack
    keeps its own column and never wins it."""
    ok = {s: v for s, v in values.items() if STACKS[s].keras_major == 3 and STACKS[s].reference and v is not None}
    if not ok:
        return None, None
    sid = min(ok, key=lambda s: ok[s])
    return sid, ok[sid]


def paper_section(df, notes: Footnotes, plots: dict[str, str]) -> list[str]:
    """Table 2 of the Keras 3 benchmark with our value beside the published one (ours / A100, ratio)."""
    if "suite" not in df.columns or not (df["suite"] == "paper").any():
        return []
    rows = paper_rows(df)
    keras_cols, other_cols = paper_columns(df)
    head = ["model", "task", "batch", *(STACKS[s].label for s in keras_cols), "Keras 3 best",
            *(STACKS[s].label for s in other_cols)]
    out = ["## Keras 3 benchmark (Table 2 layout)", "",
           "ms/step (mean over the timed steps, lower is better). Each cell: ours / published A100 value, and "
           "ours divided by published only where the cell ran as the source ran it (`source_mismatch`: the "
           "default variant with no knob override, the published batch, 100 timed steps and sequence length, "
           "full size on a whole A100, the source's GPU, an A100-SXM4-40GB: another A100 variant is named "
           "beside the ratio; a full-size GPU cell that differs says why instead, another GPU or a MIG slice by "
           "name). "
           "README's \"Method vs the sources\" lists the settings beside the source's. "
           "Bold: our fastest Keras 3 stack of the three the source published, over which \"Keras 3 best\" is "
           "taken, ours as the published one; a version stack or another stack has its own column and no part in it. "
           "The published table has no plain PyTorch column.", ""]
    table = []
    for row in rows:
        ours = {sid: ours_ms(c) for sid, c in row["ours"].items()}
        best_sid, best = best_keras3(ours)
        _, pub_best = best_keras3(row["published"])
        cells = []
        for sid in keras_cols:
            cell, pub = row["ours"][sid], row["published"][sid]
            pub_text = fmt(pub, 2) if pub is not None else "NA"
            if cell is None:
                text = f"not run / {pub_text}"
            elif cell["status"] != "ok":
                text = f"{notes.ref(cell)} / {pub_text}"
            else:
                mine = fmt(ours[sid], 2)
                mine = f"**{mine}**" if sid == best_sid else mine
                text = f"{mine} / {pub_text}{ratio_text(cell, ours[sid], pub)}"
            cells.append(text)
        best_text = f"{fmt(best, 2)} / {fmt(pub_best, 2)}" if best is not None else f"n/a / {fmt(pub_best, 2)}"
        others = []
        for sid in other_cols:
            cell = row["ours"][sid]
            others.append("not run" if cell is None else notes.ref(cell) if cell["status"] != "ok"
                          else fmt(ours[sid], 2))
        table.append([row["label"], row["task"], row["batch"], *cells, best_text, *others])
    out += [*md_table(head, table), "", *paper_throughput(rows, keras_cols + other_cols)]
    for title, name in plots.items():
        out.append(f"![{title}]({name})")
    return out + [""]


def ratio_text(cell, mine: float | None, pub: float | None) -> str:
    """What follows ours / published in an ok cell (``mine``, ``pub``: ms/step): `` (0.45x)`` where it ran as the
    source ran it (``source_mismatch``), with the A100 variant beside it where that is not the source's
    (``gpu_variant_note``); `` (no ratio: why)`` for a full-size GPU cell that did not; nothing otherwise."""
    if not pub or mine is None:
        return ""
    why = source_mismatch(cell)
    if not why:
        note = gpu_variant_note(cell)
        return f" ({mine / pub:.2f}x{'; ' + note if note else ''})"
    return f" (no ratio: {'; '.join(why)})" if cell["device"] == "gpu" and cell["size"] == "full" else ""


def paper_throughput(rows: list[dict[str, Any]], stacks: tuple[str, ...]) -> list[str]:
    """Throughput (examples/s; tokens/s for generate) and MFU per stack (``stacks``) for every row we ran."""
    table = []
    for row in rows:
        cells = []
        for sid in stacks:
            c = row["ours"][sid]
            if c is None or c["status"] != "ok":
                cells.append("")
                continue
            key = col(Metrics, "tokens_per_s") if row["task"] == "generate" else col(Metrics, "examples_per_s")
            rate = fmt(_num(c.get(key)), 1, " tok/s" if row["task"] == "generate" else "/s")
            mfu, measured = _num(c.get(col(Metrics, "mfu"))), _num(c.get(col(Metrics, "mfu_measured")))
            cells.append(rate + (f", MFU {100 * mfu:.1f} %" if mfu is not None else "")
                         + (f" ({100 * measured:.1f} % of measured peak)" if measured is not None else ""))
        if any(cells):
            table.append([row["label"], row["task"], row["batch"], *cells])
    if not table:
        return []
    return ["Throughput (examples/s; generated tokens/s for generate) and MFU (model FLOPs from "
            "`bench/core/reference/paper_flops.csv` over the GPU's dense peak for the dtype in use; blank where "
            "the GPU or the shapes are not tabulated; in brackets, over the GEMM peak `make doctor` measured "
            "in that image on that GPU):", "", *md_table(["model", "task", "batch", *stacks], table), ""]

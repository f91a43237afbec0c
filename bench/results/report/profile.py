"""The report's "Where the time goes" section, its plot, and ``bench compare --profile``: the ``profile`` blocks of
a run's cells (``bench run --profile``) summarised the same way on every stack.

Every share is of the profiled window's wall time: a category's is the device's busy fraction times the category's
part of the device's op time (``profile.categories`` / ``profile.op_ms``), and ``idle`` is the rest
(``profile.host_fraction``), so a stack's shares sum to 1. ms/step multiplies a share by the record's profiled
ms per step (``profile.ms_per_step``: the harness's wall time of the window per step; a record older than that
field: ``profile.window_ms / profile.steps``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.core.opcategories import IDLE, KEYS, label
from bench.core.stacks import STACKS
from bench.results.compare import INPUTS, KEY, STATUS, with_inputs
from bench.results.report.common import _num, md_table
from bench.results.report.versions import MATCH, OVERHEAD_PAIRS, step_read
from bench.results.schema import Profile, Record, col

BUSY, OP_MS, STEPS, WINDOW = (col(Profile, k) for k in ("device_busy_fraction", "op_ms", "steps", "window_ms"))
TOP_OPS, TRACE = col(Profile, "top_ops"), col(Profile, "trace")
PDEVICE, SLOWDOWN, DIFFERS, PER_STEP = (col(Profile, k) for k in ("device", "slowdown", "execution_differs",
                                                                    "ms_per_step"))
PARTS: tuple[str, ...] = (*KEYS, IDLE)
NOTE = ("Each stack's profile: its framework's own profiler over a few steady steps after the timed window "
        "(`bench run --profile`; the timed numbers above are not from it). Shares are of the profiled window's wall "
        "time: each category's op time scaled to the device's busy share, and idle (host): the device waiting for "
        "the host (Python, the framework's dispatch, launches, the input's hand-over). On a CPU the device is the "
        "CPU and its work the framework's ops. Slowdown: a profiled step's time over the timed p50 step (what the "
        "profiler costs). Profiles that count different devices (gpu, cpu) are not compared. Categories: "
        "docs/profile.md.")


def shares(row: Any) -> dict[str, float] | None:
    """A row's share of the profiled window per category and ``idle`` (sum 1), None without a profile."""
    busy, op_ms = _num(row.get(BUSY)), _num(row.get(OP_MS))
    if busy is None or op_ms is None:
        return None
    cats = {k: (_num(row.get(col(Profile, "categories", k))) or 0.0) for k in KEYS}
    scale = busy / op_ms if op_ms > 0 else 0.0
    return {**{k: v * scale for k, v in cats.items()}, IDLE: 1.0 - busy}


def ms_per_step(row: Any) -> float | None:
    """A profiled step's time (ms): the record's ``profile.ms_per_step`` (the window's wall time per step, which
    ``slowdown`` divides), or for a record without it the window's trace time per step."""
    recorded = _num(row.get(PER_STEP))
    if recorded is not None:
        return recorded
    window, steps = _num(row.get(WINDOW)), _num(row.get(STEPS))
    return window / steps if window is not None and steps else None


def profile_frame(df: Any) -> Any:
    """One row per ok cell with a profile: the match keys, ``stack``, ``ms_step`` and each part's share."""
    import pandas as pd

    if BUSY not in df.columns:
        return pd.DataFrame()
    ok = with_inputs(df[(df[STATUS] == "ok") & df[BUSY].notna()])
    rows = []
    for _, r in ok.iterrows():
        parts = shares(r)
        if parts is not None:
            rows.append({**{k: r.get(k, "") for k in (*MATCH, INPUTS)}, "stack": r["stack"],
                         "ms_step": ms_per_step(r), "reads": step_read(r), "counts": _text(r.get(PDEVICE)),
                         "slowdown": _num(r.get(SLOWDOWN)), "differs": _text(r.get(DIFFERS)), **parts})
    return pd.DataFrame(rows)


#: Stacks in the registry's order (a stack it does not know last).
_ORDER = {s: i for i, s in enumerate(STACKS)}


def _stack_key(stacks: Any) -> Any:
    return stacks.map(lambda s: _ORDER.get(s, len(_ORDER)))


def _groups(frame: Any) -> list[tuple[str, Any]]:
    """(cell label, its rows in stack order) for each cell of ``frame`` (``MATCH`` and the inputs)."""
    keys = [*MATCH, INPUTS]
    out = []
    for k, g in frame.fillna({k: "" for k in keys}).groupby(keys, sort=False):
        key = dict(zip(keys, k, strict=True))
        extra = ", ".join(str(x) for x in (key[col(Record, "variant")], key[INPUTS]) if x and x != "default")
        name = f"{key[col(Record, 'workload')]} {key[col(Record, 'task')]}" + (f" ({extra})" if extra else "")
        out.append((name, g.sort_values("stack", key=_stack_key)))
    return out


def _text(value: Any) -> str:
    """A cell's text, '' for a missing one (NaN included)."""
    return value if isinstance(value, str) else ""


def mixed_devices(g: Any) -> str | None:
    """One sentence when the profiles of ``g`` count different devices (``profile.device``), None otherwise."""
    counts = {c for c in g.get("counts", []) if c}
    if len(counts) < 2:
        return None
    by = ", ".join(f"{r['stack']}: {r['counts']}" for _, r in g.iterrows())
    return f"The profiles count different devices ({by}): their shares are not compared."


def largest_difference(g: Any) -> str:
    """The part whose share differs most between the stacks of one cell, in one sentence (``mixed_devices``'s
    when their profiles count different devices)."""
    if len(g) < 2:
        return f"Only {g['stack'].iloc[0]} has a profile of this cell."
    mixed = mixed_devices(g)
    if mixed:
        return mixed
    spread = {p: g[p].max() - g[p].min() for p in PARTS}
    part = max(spread, key=lambda p: spread[p])
    hi, lo = g.loc[g[part].idxmax()], g.loc[g[part].idxmin()]
    return (f"Largest difference: {label(part)}, {100 * hi[part]:.0f} % of the window on {hi['stack']} against "
            f"{100 * lo[part]:.0f} % on {lo['stack']}.")


def keras_adds(g: Any) -> list[str]:
    """For each Keras-overhead pair in ``g``: the parts where the Keras side spends more ms per step, largest
    first (at most three), and how each side read a step's results (``step_read``: the classic default's notebook
    callback makes Keras 3 on JAX and PyTorch wait for every step, the twins read once per epoch), in one
    sentence."""
    out = []
    by = {r["stack"]: r for _, r in g.iterrows()}
    for native, keras in OVERHEAD_PAIRS:
        if native not in by or keras not in by or by[native]["ms_step"] is None or by[keras]["ms_step"] is None:
            continue
        a, b = by[native], by[keras]
        if a.get("counts", "") != b.get("counts", ""):
            continue  # one counts the GPU's kernels, the other the host's ops: no difference to tell
        delta = {p: b[p] * b["ms_step"] - a[p] * a["ms_step"] for p in PARTS}
        added = sorted(((d, p) for p, d in delta.items() if d > 0), reverse=True)[:3]
        what = ", ".join(f"+{d:.3g} ms/step {label(p)}" for d, p in added) or "nothing (it spends less in every part)"
        reads = f"step results read: {a.get('reads', 'n/a')} / {b.get('reads', 'n/a')}"
        if str(b.get("reads", "")).endswith("async off"):
            reads += " (Keras converts each step's logs on the training thread: the host waits for every step)"
        out.append(f"{keras} against {native} ({b['ms_step']:.3g} vs {a['ms_step']:.3g} ms per profiled step): "
                   f"{what}; {reads}.")
    return out


def profile_section(frame: Any, plots: dict[str, str]) -> list[str]:
    """"Where the time goes": per cell, each stack's shares (%) and the sentences; the plot's link when drawn."""
    if frame is None or frame.empty:
        return []
    out = ["## Where the time goes", "", NOTE, ""]
    out += [f"![{title}]({link})" for title, link in plots.items()] + ([""] if plots else [])
    for name, g in _groups(frame):
        parts = [p for p in PARTS if (g[p] > 0).any()]  # a category no stack spent time in: left out of the table
        head = ["stack", "ms/step (profiled)", "slowdown", *(label(p) for p in parts)]
        rows = []
        for _, r in g.iterrows():
            ms = "n/a" if r["ms_step"] is None else f"{r['ms_step']:.3g}"
            slow = "n/a" if _num(r.get("slowdown")) is None else f"{r['slowdown']:.2f}x"
            rows.append([r["stack"], ms, slow, *(f"{100 * r[p]:.1f} %" for p in parts)])
        out += [f"### {name}", "", *md_table(head, rows), "", largest_difference(g), *keras_adds(g), *differs(g), ""]
    return out


def differs(g: Any) -> list[str]:
    """One sentence per reason the profiled steps of some stacks of ``g`` execute otherwise than their timed ones
    (``profile.execution_differs``), naming those stacks."""
    reasons: dict[str, list[str]] = {}
    for _, r in g.iterrows():
        if _text(r.get("differs")):
            reasons.setdefault(r["differs"], []).append(r["stack"])
    return [f"Profiled otherwise than timed on {', '.join(stacks)}: {why}." for why, stacks in reasons.items()]


def profile_plots(frame: Any, out_dir: Path) -> dict[str, str]:
    """A stacked bar per stack of each cell's shares (one panel per cell); {title: file name}, {} without rows."""
    if frame is None or frame.empty:
        return {}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = _groups(frame)
    fig, axes = plt.subplots(len(groups), 1, figsize=(10, 1.2 + sum(0.35 * len(g) + 0.6 for _, g in groups)),
                             squeeze=False)
    cmap = plt.get_cmap("tab20")
    for ax, (name, g) in zip(axes[:, 0], groups, strict=True):
        left = [0.0] * len(g)
        for i, p in enumerate(PARTS):
            values = [100 * v for v in g[p]]
            ax.barh(list(g["stack"]), values, left=left, label=label(p),
                    color="lightgrey" if p == IDLE else cmap(i % 20))
            left = [a + b for a, b in zip(left, values, strict=True)]
        ax.set_title(name, fontsize=9)
        ax.set_xlim(0, 100)
        ax.invert_yaxis()
    axes[-1, 0].set_xlabel("% of the profiled window")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=7)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(out_dir / "where_the_time_goes.png", dpi=110)
    plt.close(fig)
    return {"Where the time goes: share of the profiled window per category": "where_the_time_goes.png"}


def side_by_side(ra: Any, rb: Any) -> Any:
    """Two profiles of one cell (rows of two runs): per part, each side's share (%) and ms/step, and B - A; a part
    neither side spent time in is left out."""
    import pandas as pd

    sa, sb = shares(ra), shares(rb)
    if sa is None or sb is None:
        raise ValueError("a side has no profile")
    da, db = _text(ra.get(PDEVICE)), _text(rb.get(PDEVICE))
    if da != db:
        raise ValueError(f"the profiles count different devices (A: {da or 'n/a'}, B: {db or 'n/a'}): not compared")
    ma, mb = ms_per_step(ra) or 0.0, ms_per_step(rb) or 0.0
    return pd.DataFrame([{"part": label(p), "A %": 100 * sa[p], "B %": 100 * sb[p], "A ms/step": sa[p] * ma,
                          "B ms/step": sb[p] * mb, "B - A ms/step": sb[p] * mb - sa[p] * ma}
                         for p in PARTS if sa[p] or sb[p]])


def compare_profiles(df_a: Any, df_b: Any) -> list[tuple[str, Any]]:
    """(cell, ``side_by_side``) for every ok cell (``KEY`` and the inputs of its id) that both runs profiled; where
    the two cannot be compared (they count different devices), (cell, the sentence saying why) instead."""
    if BUSY not in df_a.columns or BUSY not in df_b.columns:
        return []
    a, b = (with_inputs(d[(d[STATUS] == "ok") & d[BUSY].notna()]).set_index([*KEY, INPUTS]) for d in (df_a, df_b))
    out = []
    for key in a.index.intersection(b.index):
        ra, rb = a.loc[key], b.loc[key]
        ra = ra.iloc[0] if getattr(ra, "ndim", 1) > 1 else ra
        rb = rb.iloc[0] if getattr(rb, "ndim", 1) > 1 else rb
        cell = " ".join(str(k) for k in key if k)
        try:
            out.append((cell, side_by_side(ra, rb)))
        except ValueError as e:
            out.append((cell, str(e)))
    return out

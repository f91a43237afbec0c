"""The report's comparison sections: "Versions" (each version stack against the stack it derives from) and
"Keras overhead" (Keras 3 on a backend against that backend's native code), per matched cell the candidate/base
ratio of ms/step with its bootstrap interval, the Mann-Whitney p and a verdict (``bench.results.compare.ratio_stats``
and its ``RULE``), beside the first step's (or epoch's) time and the device memory peak as deltas."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.core.stacks import STACKS
from bench.results.compare import (
    BOOTSTRAP_SEED,
    CI_LEVEL,
    CI_METHOD,
    INPUTS,
    KEY,
    N_RESAMPLES,
    STATUS,
    PairStats,
    cell_statuses,
    ratio_stats,
    repeat_values,
    rule_tests,
    rule_text,
    with_inputs,
)
from bench.results.report.common import _num, fmt_beside, md_table
from bench.results.report.method import order_line
from bench.results.schema import Env, Memory, Metrics, Record, col, setting_col
from bench.results.schema.effective import placement_now

#: The metric compared: its per-repeat values (``repeats.ms_per_step_mean.values``) are the samples.
METRIC = "ms_per_step_mean"
#: A cell's identity across stacks: the compare key without the stack, and the inputs its id names.
MATCH = [c for c in KEY if c != col(Record, "stack")]
#: (native stack, Keras 3 stack on that backend): the Keras-overhead pairs, base first.
OVERHEAD_PAIRS = (("jax", "keras3-jax"), ("pytorch", "keras3-torch"))
#: The time of the first step, else the first epoch (both include tracing and compilation), in that preference.
FIRST_TIME = (("step", col(Metrics, "first_step_s")), ("epoch", col(Metrics, "first_epoch_s")))
DEVICE_PEAK = col(Memory, "device_peak_bytes")
PLACEMENT = col(Record, "settings", "train_data_placement")
KERAS_BACKEND = setting_col("keras_backend")
PROGRESS, ASYNC_BATCH_END = setting_col("progress"), setting_col("keras_async_batch_end")
SYNC = col(Metrics, "sync")
MIB = 2**20


def _declared(block: type, name: str) -> str | None:
    """The column of a field the schema may not declare yet (records older than it never have it)."""
    try:
        return col(block, name)
    except KeyError:
        return None


#: The record's own account of a version stack: its base and the pins as installed (None: not declared).
STACK_BASE_COL = _declared(Env, "stack_base")
PINS_COL = _declared(Env, "pins")


@dataclass
class PairTable:
    """One candidate against one base: a row per matched ok cell.

    Attributes:
        base, candidate: stack ids; ratios are candidate / base.
        rows: per cell: ``label``, suite, size, ``stats`` (``PairStats``), ``first`` (which first time:
            step | epoch | None), ``first_delta_s`` (s), ``peak_delta_mib`` (MiB, None where a side has no
            device peak, e.g. on a CPU).
        pins: the requirement lines that differ (records first, else ``Stack.pins``); empty when none is known.
        pins_declared: ``pins`` are the stack list's declaration, the candidate's records holding none.
        order: the run's order rule.
        skipped: cells left out and why (several ok rows for one cell).
    """

    base: str
    candidate: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    pins: list[str] = field(default_factory=list)
    pins_declared: bool = False
    order: str = ""
    skipped: list[str] = field(default_factory=list)

    @property
    def slug(self) -> str:
        """File-name-safe name of the pair."""
        return f"{self.candidate}_vs_{self.base}".replace("=", "-").replace("/", "-")


def _stack_order(df) -> list[str]:
    present = list(dict.fromkeys(df["stack"]))
    return [s for s in STACKS if s in present] + [s for s in present if s not in STACKS]


def _column_values(rows, column: str | None) -> list[Any]:
    if column is None or column not in rows.columns:
        return []
    distinct: dict[str, Any] = {}  # keyed by repr: a list cell (env.pins) is not hashable
    for v in rows[column].dropna():
        if not isinstance(v, str) or v != "":
            distinct.setdefault(repr(v), v)
    return list(distinct.values())


def base_of(df, stack: str) -> str | None:
    """The stack ``stack`` derives from: its rows' recorded base where the records have one, else its
    ``Stack.base`` (None for a hand-written or unknown stack)."""
    recorded = _column_values(df[df["stack"] == stack], STACK_BASE_COL)
    if recorded:
        return str(recorded[0])
    return getattr(STACKS.get(stack), "base", None)


def version_pairs(df) -> list[tuple[str, str]]:
    """(base, candidate) for every stack in ``df`` whose base is in ``df`` too, in stack order."""
    present = set(df["stack"])
    return [(b, s) for s in _stack_order(df) if (b := base_of(df, s)) and b in present and b != s]


def pins_of(df, stack: str, declared: bool = True) -> list[str]:
    """The pins of ``stack`` as its records hold them (``env.pins``: a list, or package -> installed version),
    else as declared (``Stack.pins``; ``declared=False``: the records' alone)."""
    rows = df[df["stack"] == stack]
    out: list[str] = []
    for v in _column_values(rows, PINS_COL):
        parsed = v  # a list or mapping cell is one already (bench.results.rows.read_rows)
        if isinstance(parsed, dict):
            out += [f"{k}=={x}" for k, x in parsed.items()]
        elif isinstance(parsed, list):
            out += [str(x) for x in parsed]
        else:
            out.append(str(parsed))
    if PINS_COL is not None:  # a mapping flattened by the collector: one column per package
        for c in sorted(c for c in rows.columns if c.startswith(PINS_COL + ".")):
            out += [f"{c[len(PINS_COL) + 1:]}=={v}" for v in _column_values(rows, c)]
    if out or not declared:
        return list(dict.fromkeys(out))
    return list(getattr(STACKS.get(stack), "pins", ()))


def order_of(rows) -> str:
    """The order the rows ``rows`` ran in (a failed row ran in its round too), as the Method section says it
    (``method.order_line``, the one reading of ``schedule.*``): the rounds and each order rule with its seed, and the
    rows run outside rounds beside them."""
    return order_line(rows).removeprefix("- Order: ")


def _first_time(ra, rb) -> tuple[str | None, float | None]:
    for name, column in FIRST_TIME:
        a, b = _num(ra.get(column)), _num(rb.get(column))
        if a is not None and b is not None:
            return name, b - a
    return None, None


def _peak_delta(ra, rb) -> float | None:
    a, b = _num(ra.get(DEVICE_PEAK)), _num(rb.get(DEVICE_PEAK))
    return None if a is None or b is None else (b - a) / MIB


def data_path(row) -> str:
    """Where the row's training batches were made: ``host`` or ``device``, the first word of
    ``settings.train_data_placement`` (``n/a`` where not recorded). The Keras-overhead pairs show it because the
    stacks' default pipelines differ (``pytorch``: the whole set on the device; ``keras3-torch``: NumPy batches
    copied each step), so a ratio whose two sides differ includes that copy, not Keras alone. An older record's
    wording is read as today's (``placement_now``: its ``backend tensors (device)`` was no word of either)."""
    value = row.get(PLACEMENT) if PLACEMENT in row.index else None
    value = placement_now(value, row.get(KERAS_BACKEND) if KERAS_BACKEND in row.index else None)
    return str(value).split(" ", 1)[0] if isinstance(value, str) and value else "n/a"


def step_read(row) -> str:
    """How the row's training loop reads a step's results back on the host. A Keras row (``settings.progress``
    recorded): its progress form and, on Keras 3, whether Keras dispatches batch ends in a thread pool
    (``settings.keras_async_batch_end``: ``async on``; ``async off``: the logs are converted on the training
    thread after every step, which waits for the step; keras/src/callbacks/callback_list.py@v3.15.1:59-84,
    188-220), e.g. ``keras_tqdm, async off``. A row without a progress form (the PyTorch and JAX twins): its timing
    cadence in effect (``metrics.sync``), ``sync=epoch`` (their loss and accuracy read once per epoch; every step
    under ``sync=step``). ``n/a``
    where neither is recorded."""
    progress = row.get(PROGRESS) if PROGRESS in row.index else None
    if isinstance(progress, str) and progress:
        flag = row.get(ASYNC_BATCH_END) if ASYNC_BATCH_END in row.index else None
        if isinstance(flag, str):  # a CSV read without its JSON lines
            flag = {"true": True, "false": False}.get(flag.lower())
        return progress + ("" if not isinstance(flag, bool) else f", async {'on' if flag else 'off'}")
    sync = row.get(SYNC) if SYNC in row.index else None
    return f"sync={sync}" if isinstance(sync, str) and sync else "n/a"


def _label(key: dict[str, Any]) -> str:
    extra = ", ".join(str(x) for x in (key[col(Record, "variant")], key[INPUTS]) if x and x != "default")
    name = f"{key[col(Record, 'workload')]} {key[col(Record, 'task')]}"
    return f"{name} ({extra})" if extra else name


def pair_table(df, base: str, candidate: str) -> PairTable:
    """Every ok cell of ``candidate`` matched with ``base``'s same cell (``MATCH`` and the inputs of its id), with
    ``ratio_stats`` of their per-repeat ms/step."""
    recorded = pins_of(df, candidate, declared=False)
    pins = recorded or pins_of(df, candidate)
    table = PairTable(base, candidate, pins=pins, pins_declared=bool(pins) and not recorded,
                      order=order_of(df[df["stack"].isin([base, candidate])]))
    ok = with_inputs(df[df[STATUS] == "ok"])
    keys = [*MATCH, INPUTS]
    ok = ok.assign(**{k: ok[k].fillna("") if k in ok.columns else "" for k in keys})
    sides = {s: {k: g for k, g in ok[ok["stack"] == s].groupby(keys, sort=False)} for s in (base, candidate)}
    for k, gb in sides[candidate].items():
        ga = sides[base].get(k)
        if ga is None:
            continue
        key = dict(zip(keys, k, strict=True))
        if len(ga) > 1 or len(gb) > 1:
            table.skipped.append(f"{_label(key)}: several ok rows for one cell")
            continue
        ra, rb = ga.iloc[0], gb.iloc[0]
        first, delta = _first_time(ra, rb)
        stats = ratio_stats(repeat_values(ra, METRIC), repeat_values(rb, METRIC))
        table.rows.append({"label": _label(key), "suite": key[col(Record, "suite")], "size": key[col(Record, "size")],
                           "stats": stats, "first": first, "first_delta_s": delta,
                           "peak_delta_mib": _peak_delta(ra, rb),
                           "data": f"{data_path(ra)} / {data_path(rb)}",
                           "reads": f"{step_read(ra)} / {step_read(rb)}"})
    table.skipped += not_ok_cells(df, base, candidate, keys)
    return table


def not_ok_cells(df, base: str, candidate: str, keys: list[str]) -> list[str]:
    """The cells both stacks ran where a side has no ok row (failed, timeout, oom: a cell broken on the candidate is
    what a release check is for), each as ``label: base <statuses>, candidate <statuses> (reason)``; a cell one
    stack has no row of is not listed.
    Not a cell a side could not run by design (``unsupported``: the ``jax`` stack's paper cells), which the report's
    notes list. Statuses and reasons as ``bench.results.compare.cell_statuses`` reads them (a reason cut to its
    first line, 120 characters)."""
    rows = df[df["stack"].isin([base, candidate])]
    both = cell_statuses(rows, keys)  # the reason: the first not-ok row's of either stack, in row order
    sides = {s: cell_statuses(rows[rows["stack"] == s], keys) for s in (base, candidate)}
    out = []
    for k, (_, reason) in both.items():
        statuses = {s: sides[s].get(k, ([], ""))[0] for s in (base, candidate)}
        on_both, compared = all(statuses.values()), all("ok" in v for v in statuses.values())
        if not on_both or compared or any("unsupported" in v for v in statuses.values()):
            continue
        why = reason.splitlines()[0][:120] if reason else ""
        label = _label(dict(zip(keys, k, strict=True)))
        out.append(f"{label}: {base} {', '.join(statuses[base])}, {candidate} {', '.join(statuses[candidate])}"
                   + (f" ({why})" if why else ""))
    return out


def version_tables(df) -> list[PairTable]:
    """A ``PairTable`` per version pair in ``df`` (``version_pairs``)."""
    return [pair_table(df, b, c) for b, c in version_pairs(df)]


def overhead_tables(df) -> list[PairTable]:
    """A ``PairTable`` per Keras-overhead pair (``OVERHEAD_PAIRS``) with both stacks in ``df`` and a matched cell
    (compared, or left out with its reason)."""
    present = set(df["stack"])
    tables = [pair_table(df, b, c) for b, c in OVERHEAD_PAIRS if b in present and c in present]
    return [t for t in tables if t.rows or t.skipped]


def _signed(v: float | None, digits: int) -> str:
    return "n/a" if v is None else f"{v:+.{digits}f}"


def ratio_text(s: PairStats) -> str:
    """``1.031 [1.012, 1.050]``; the interval is left out where it was not computed. Each number with more digits
    where 3 would put it on the other side of the rule than it is (``fmt_beside``: 1.0199, not 1.020, beside no
    detectable change at the 2 % threshold)."""
    if s.ratio is None:
        return "n/a"
    rule = rule_tests()
    ratio = fmt_beside(s.ratio, 3, rule["ratio"])
    if s.ci_low is None or s.ci_high is None:
        return ratio
    return f"{ratio} [{fmt_beside(s.ci_low, 3, rule['ci_low'])}, {fmt_beside(s.ci_high, 3, rule['ci_high'])}]"


def stats_note() -> str:
    """The sentence saying how every ratio, interval, p and verdict was computed (the rule included)."""
    return (f"Ratio: median ms/step (`{col(Metrics, METRIC)}`, one value per repeat) of the candidate over the base, "
            f"with its {CI_LEVEL:.0%} confidence interval by bootstrap over the repeats (scipy.stats.bootstrap, "
            f"each side resampled independently, method {CI_METHOD}: defined at any n >= 2, where BCa is not; "
            f"{N_RESAMPLES} resamples, seed "
            f"{BOOTSTRAP_SEED}), and the two-sided Mann-Whitney p (exact; a permutation test where values tie). "
            f"Verdict: {rule_text()}. Δ first: candidate minus base, s, of `{FIRST_TIME[0][1]}` where both rows "
            f"have it (step), else `{FIRST_TIME[1][1]}` (epoch); both include tracing and compilation. Δ peak: "
            f"`{DEVICE_PEAK}`, MiB (n/a where a side has none, e.g. on a CPU).")


def table_lines(t: PairTable) -> list[str]:
    """The Markdown table of one pair."""
    head = ["cell", "suite", "size", f"n {t.base} / {t.candidate}", f"ratio [{CI_LEVEL:.0%} CI]", "p", "verdict",
            "Δ first (s)", "Δ peak (MiB)", f"training data {t.base} / {t.candidate}",
            f"step results read {t.base} / {t.candidate}"]
    rows = []
    for r in t.rows:
        s: PairStats = r["stats"]
        first = "n/a" if r["first"] is None else f"{_signed(r['first_delta_s'], 2)} ({r['first']})"
        rows.append([r["label"], r["suite"], r["size"], f"{s.n_a} / {s.n_b}", ratio_text(s),
                     fmt_beside(s.p_value, 3, rule_tests()["p_value"]),
                     s.time_verdict_text, first, _signed(r["peak_delta_mib"], 1), r["data"], r["reads"]])
    return [*md_table(head, rows), ""] + [f"Left out: {x}." for x in t.skipped] + ([""] if t.skipped else [])


def pair_lines(t: PairTable) -> list[str]:
    """A pair's table, or the line saying why it has none: no ok cell on both stacks, or every cell that was left
    out (``PairTable.skipped``), named."""
    if t.rows:
        return table_lines(t)
    if t.skipped:
        return ["No cell compared."] + [f"Left out: {x}." for x in t.skipped] + [""]
    return ["No ok cell ran on both stacks.", ""]


def _plot_line(plots: dict[str, str], title: str) -> list[str]:
    return [f"![{title}]({plots[title]})", ""] if title in plots else []


#: Titles of the sections' plots (``bench.results.report.plots.forest_plot``).
VERSIONS_PLOT = "Versions: ms/step ratio candidate/base"
OVERHEAD_PLOT = "Keras overhead: ms/step ratio Keras/native"


def versions_section(tables: list[PairTable], plots: dict[str, str]) -> list[str]:
    """The "Versions" section: per pair its pins, order rule and table; nothing without a pair."""
    if not tables:
        return []
    out = ["## Versions", "", "Each version stack against the stack it derives from, cell by cell (ratio > 1: the "
           "candidate is slower).", "", stats_note(), ""]
    for t in tables:
        pins = ", ".join(f"`{p}`" for p in t.pins) or "none recorded"
        pins += " (as the stack list declares them: the records hold none)" if t.pins_declared else ""
        out += [f"### {t.candidate} vs {t.base}", "", f"- Pins that differ: {pins}", f"- Order: {t.order}", ""]
        out += pair_lines(t)
    return out + _plot_line(plots, VERSIONS_PLOT)


def overhead_section(tables: list[PairTable], plots: dict[str, str], after_versions: bool = False) -> list[str]:
    """The "Keras overhead" section: Keras 3 on a backend over that backend's native code, per matched cell;
    nothing without a pair. ``after_versions``: the Versions section above already says how the numbers were
    computed."""
    if not tables:
        return []
    note = "Ratio, interval, p and verdict as in Versions above." if after_versions else stats_note()
    out = ["## Keras overhead", "", "Keras 3 on a backend against the same workload written natively for it "
           "(`" + "`, `".join(f"{c} / {b}" for b, c in OVERHEAD_PAIRS) + "`), cell by cell: a ratio > 1 means "
           "Keras is slower than the native code on that backend (its layers, `fit` loop, data path and per-step "
           "reads, as the last two columns show them, cost that much), < 1 that it is faster; \"slower\" / "
           "\"faster\" are Keras'. \"training data\" says where each side made its training batches "
           "(`settings.train_data_placement`), native first: where the two differ (the default cells of "
           "`keras3-torch / pytorch` read `device / host`: the PyTorch loop holds the whole set on the device, "
           "Keras copies NumPy batches each step), the ratio includes that copy; compare the tuning suite's "
           "matching-data variants for Keras alone. \"step results read\" says how each side reads a step's "
           "results on the host: the native loop at its timing cadence (`metrics.sync`: at `epoch` its loss "
           "and accuracy once per epoch), Keras by its progress form (`settings.progress`) and whether Keras 3 "
           "hands batch ends to a thread pool (`settings.keras_async_batch_end`). The classic suite's default, "
           "`keras_tqdm` (the 2017 notebooks' per-batch callback), reads `async off` on JAX and PyTorch: Keras "
           "converts every step's logs on the training thread, so the host waits for each step, which the native "
           "loop does not; its ratio includes those waits. The Keras cells of `--set progress=none` or "
           "`progress=bar` keep the thread pool (`async on`), but they are variants, not matched with the "
           "twins' default cells here.", "", note, ""]
    for t in tables:
        out += [f"### {t.candidate} / {t.base}", "", f"- Order: {t.order}", "", *pair_lines(t)]
    return out + _plot_line(plots, OVERHEAD_PLOT)


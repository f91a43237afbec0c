"""The results history: every collected run's rows in one SQLite file (``results/history.sqlite``).

Why SQLite: the collector image has pandas but no pyarrow, so Parquet is out; SQLite comes with Python's standard
library, is one file that takes appends, replaces a re-collected run's rows in one transaction (a crash leaves the
old rows or the new, never half of each, and never two copies), and answers the queries users ask of a history
("this cell over time", "this stack's runs") with an index; pandas reads it with ``pd.read_sql``.

One row per (run, cell record): the key columns (``KEY_COLUMNS``: run, date, stack, the framework versions the
row's env held, pins, device and GPU, the cell's suite/workload/task/size/variant/inputs) and the metrics
(``METRIC_COLUMNS``: ms/step and its spreads, repeats, throughput, MFU, memory, energy). Each column is read from
the collected CSV's declared column (``bench.results.schema.col``), so a renamed record field breaks here at import.

The layout carries its version in ``meta.history_schema``. A history written by an older layout still loads: a
column it lacks is added (empty for its old rows). One written by a newer layout, or a file that is not a bench
history, raises ``HistoryError`` with one line saying so.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.core.families import FRAMEWORKS
from bench.core.stacks import STACKS
from bench.results.schema import EffectiveSettings, Env, Memory, Metrics, Model, Record, Repeats, col, spread_col

#: The layout this code writes (``meta.history_schema``).
HISTORY_SCHEMA = 1
#: The history's file name beside the collected CSVs (``results/history.sqlite``).
HISTORY_NAME = "history.sqlite"


class HistoryError(Exception):
    """The history cannot be read or written: not a bench history, a newer layout, an unknown run."""


@dataclass(frozen=True)
class Column:
    """One column of the ``cells`` table: its ``name``, SQLite ``type`` and how a collected CSV row gives it."""

    name: str
    type: str
    get: Callable[[dict[str, Any]], Any]


def _field(column: str) -> Callable[[dict[str, Any]], Any]:
    return lambda row: row.get(column)


def _mapping(row: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The row's columns under ``prefix`` (``env.packages.``) as {key: value}, empty values left out."""
    return {k[len(prefix):]: v for k, v in row.items() if k.startswith(prefix) and _value(v) is not None}


def version_label(row: dict[str, Any]) -> str:
    """The framework versions a collected row ran, e.g. ``keras 3.15.1, jax 0.10.2``: the x labels of the trend.

    Read from what the row holds, never from the stack's name: Keras from ``settings.keras_version`` (what the
    engine ran: tf-keras 2.21.0 for Keras 2, though the image also has Keras 3), then the backend Keras ran on
    (``settings.keras_backend``), or for a row without Keras its stack's backend (every framework of
    ``bench.core.families.FRAMEWORKS`` in ``env.packages`` for an unknown stack: the plain-JAX image holds
    TensorFlow for tf.data, which does no training there) and the model and optimizer libraries it records
    (``settings.flax_version``, ``settings.optax_version``); then any pin the row records (``env.pins.*``) that
    names another package.
    Empty when the row holds no versions (an old record without ``env.packages``).
    """
    packages = _mapping(row, f"{col(Env, 'packages')}.")
    parts: list[str] = []
    keras = _value(row.get(col(EffectiveSettings, "keras_version")))
    backend = _value(row.get(col(EffectiveSettings, "keras_backend")))
    if keras is not None:
        parts.append(f"keras {keras}")
    stack = STACKS.get(str(row.get(col(Record, "stack"))))
    if keras is None and stack is not None:
        backend = stack.backend
    names = [backend] if backend in FRAMEWORKS else [f for f in FRAMEWORKS if f in packages]
    parts += [f"{n} {packages[n]}" for n in names if n in packages]
    if keras is None:
        for lib in ("flax", "optax"):
            version = _value(row.get(col(EffectiveSettings, f"{lib}_version")))
            if version is not None:
                parts.append(f"{lib} {version}")
                names.append(lib)
    named = {"keras", *names}
    for pkg, version in sorted(_mapping(row, "env.pins.").items()):
        if pkg.split(".")[0] not in named:
            parts.append(f"{pkg.split('.')[0]} {version}")
    return ", ".join(parts)


#: ``machine_label`` of a row whose record names no GPU or CPU model: rows of it may come from different models.
UNKNOWN_MACHINES = ("unknown GPU", "CPU: unknown")


def machine_label(row: dict[str, Any]) -> str:
    """The GPU model of a GPU row (``NVIDIA H100 80GB HBM3``), ``CPU: <model>`` for a CPU row: a trend line never
    joins points measured on different machines' models; one of ``UNKNOWN_MACHINES`` where the record names none."""
    if row.get(col(Record, "device")) == "gpu":
        return str(_value(row.get(col(Env, "gpu", "name"))) or UNKNOWN_MACHINES[0])
    return f"CPU: {_value(row.get(col(Env, 'cpu_model'))) or 'unknown'}"


def known_machine(cells):
    """Which rows of ``cells`` (a ``load``ed frame) name their machine's model: not one of ``UNKNOWN_MACHINES``, nor
    empty (an older layout's row); the trends and the BMF export leave the others out (two may be two models)."""
    return cells["machine"].notna() & ~cells["machine"].isin(UNKNOWN_MACHINES)


_MS = "ms_per_step_mean"
#: What ``one_per_run`` takes the median of across a run's rows of one cell on one machine model.
MEDIAN_OVER_ROWS = (_MS, "ms_per_step_p50", "first_epoch_s", "first_step_s", "samples_per_s",
                    "examples_per_s", "tokens_per_s", "achieved_tflops", "mfu", "j_per_step")


def one_per_run(cells):
    """``cells`` with one row per run, stack, cell and machine model, and a column ``rows``:
    how many rows it stands for. A run holds several rows of one cell on one model when it ran on several GPUs of the
    model (device indexes or hosts): a trend point, or a BMF benchmark, is one per run and machine model, so such
    rows become one: the median of each of ``MEDIAN_OVER_ROWS``, the repeats' min and max (``repeats_n`` summed)
    over all their repeats (a one-repeat row: its value), ``started_utc`` the first, and any other column its value
    where the rows agree, else empty (two GPUs' ``gpu_uuid``). A single row is kept as it is."""
    import pandas as pd

    out = []
    for _, g in cells.groupby(["run", "stack", "cell", "machine"], sort=False, dropna=False):
        if len(g) == 1:
            out.append({**g.iloc[0].to_dict(), "rows": 1})
            continue
        n = g["repeats_n"].fillna(1).clip(lower=1)
        lo, hi = (g[f"ms_per_step_repeats_{m}"].where(n >= 2, g[_MS]) for m in ("min", "max"))
        row = {c: (g[c].iloc[0] if g[c].nunique(dropna=False) == 1 else None) for c in g.columns}
        row |= {c: g[c].median() for c in MEDIAN_OVER_ROWS if c in g.columns}
        row |= {"ms_per_step_repeats_min": lo.min(), "ms_per_step_repeats_max": hi.max(), "repeats_n": int(n.sum()),
                "started_utc": g["started_utc"].min(), "rows": len(g)}
        out.append(row)
    return pd.DataFrame(out, columns=[*cells.columns, "rows"])


def cell_key(row: dict[str, Any]) -> str:
    """The cell without its stack: ``cell_id`` minus its leading ``<stack>__`` (suite, workload, task, size,
    variant and the inputs off their defaults), so the same cell on two stacks shares a trend plot."""
    cid, stack = str(row.get(col(Record, "cell_id")) or ""), str(row.get(col(Record, "stack")) or "")
    return cid[len(stack) + 2:] if cid.startswith(f"{stack}__") else cid


def _json(prefix: str) -> Callable[[dict[str, Any]], Any]:
    return lambda row: json.dumps(_mapping(row, prefix), sort_keys=True) if _mapping(row, prefix) else None


def _date(row: dict[str, Any]) -> Any:
    started = _value(row.get(col(Record, "started_utc")))
    return str(started)[:10] if started else None


#: The key columns, in order: what identifies a row and what a trend groups by.
KEY_COLUMNS: tuple[Column, ...] = (
    Column("run", "TEXT NOT NULL", lambda row: row["_run"]),
    Column("date", "TEXT", _date),
    Column("started_utc", "TEXT", _field(col(Record, "started_utc"))),
    Column("cell_id", "TEXT NOT NULL", _field(col(Record, "cell_id"))),
    Column("cell", "TEXT", cell_key),
    Column("stack", "TEXT", _field(col(Record, "stack"))),
    Column("stack_base", "TEXT", _field("env.stack_base")),
    Column("versions", "TEXT", version_label),
    Column("pins", "TEXT", _json("env.pins.")),
    Column("packages", "TEXT", _json(f"{col(Env, 'packages')}.")),
    Column("suite", "TEXT", _field(col(Record, "suite"))),
    Column("workload", "TEXT", _field(col(Record, "workload"))),
    Column("task", "TEXT", _field(col(Record, "task"))),
    Column("size", "TEXT", _field(col(Record, "size"))),
    Column("variant", "TEXT", _field(col(Record, "variant"))),
    Column("batch_size", "INTEGER", _field(col(Record, "batch_size"))),
    Column("device", "TEXT", _field(col(Record, "device"))),
    Column("machine", "TEXT", machine_label),
    Column("gpu_name", "TEXT", _field(col(Env, "gpu", "name"))),
    Column("gpu_uuid", "TEXT", _field(col(Env, "gpu", "uuid"))),
    Column("cpu_model", "TEXT", _field(col(Env, "cpu_model"))),
    Column("host", "TEXT", _field(col(Env, "host"))),
    Column("git_commit", "TEXT", _field(col(Env, "git_commit"))),
    Column("image_digest", "TEXT", _field(col(Env, "image_digest"))),
    Column("status", "TEXT", _field(col(Record, "status"))),
    Column("reason", "TEXT", _field(col(Record, "reason"))),
)

#: The metrics, in order (units in the names' fields: ``bench fields``).
METRIC_COLUMNS: tuple[Column, ...] = (
    Column(_MS, "REAL", _field(col(Metrics, _MS))),
    Column("ms_per_step_p50", "REAL", _field(col(Metrics, "ms_per_step_p50"))),
    Column("ms_per_step_std", "REAL", _field(col(Metrics, "ms_per_step_std"))),
    Column("repeats_n", "INTEGER", _field(col(Repeats, "n"))),
    Column("ms_per_step_repeats_min", "REAL", _field(spread_col(_MS, "min"))),
    Column("ms_per_step_repeats_max", "REAL", _field(spread_col(_MS, "max"))),
    Column("ms_per_step_repeats_cv", "REAL", _field(spread_col(_MS, "cv"))),
    Column("ms_per_step_repeats", "TEXT", _field(spread_col(_MS, "values"))),
    Column("first_epoch_s", "REAL", _field(col(Metrics, "first_epoch_s"))),
    Column("first_step_s", "REAL", _field(col(Metrics, "first_step_s"))),
    Column("samples_per_s", "REAL", _field(col(Metrics, "samples_per_s"))),
    Column("examples_per_s", "REAL", _field(col(Metrics, "examples_per_s"))),
    Column("tokens_per_s", "REAL", _field(col(Metrics, "tokens_per_s"))),
    Column("achieved_tflops", "REAL", _field(col(Metrics, "achieved_tflops"))),
    Column("mfu", "REAL", _field(col(Metrics, "mfu"))),
    Column("j_per_step", "REAL", _field(col(Metrics, "j_per_step"))),
    Column("params_total", "INTEGER", _field(col(Model, "params_total"))),
    Column("host_peak_rss_bytes", "INTEGER", _field(col(Memory, "host_peak_rss_bytes"))),
    Column("device_peak_bytes", "INTEGER", _field(col(Memory, "device_peak_bytes"))),
)
COLUMNS: tuple[Column, ...] = KEY_COLUMNS + METRIC_COLUMNS


def _value(v: Any) -> Any:
    """A CSV cell as SQLite takes it: NaN/NA/empty -> None, numpy scalars -> Python, a list (a collected frame's
    list cell) -> its JSON text, as the CSV holds it."""
    if v is None or (isinstance(v, str) and v == ""):
        return None
    if isinstance(v, list):
        return json.dumps(v)
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    try:
        import pandas as pd

        if v is pd.NA or v is pd.NaT:
            return None
    except ImportError:
        pass
    return v


def _connect(path: Path, create: bool) -> sqlite3.Connection:
    """Open the history (``create``: make it when absent); checks and upgrades the layout.

    Raises:
        HistoryError: absent (not ``create``), not a SQLite file, not a bench history, or a newer layout.
    """
    path = Path(path)
    if not create and not path.is_file():
        raise HistoryError(f"no history at {path} (`bench collect` / `make collect` writes it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=30)
    try:
        _check(conn, path, create)
    except HistoryError:
        conn.close()
        raise
    return conn


def _check(conn: sqlite3.Connection, path: Path, create: bool) -> None:
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as e:
        raise HistoryError(f"{path} is not a bench history ({e})") from e
    if not tables and create:
        with conn:
            conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
            conn.execute("INSERT INTO meta VALUES ('history_schema', ?)", (str(HISTORY_SCHEMA),))
            conn.execute("CREATE TABLE runs (run TEXT PRIMARY KEY, collected_utc TEXT, started_utc TEXT, "
                         "cells INTEGER, ok INTEGER, source TEXT)")
            conn.execute(f"CREATE TABLE cells ({', '.join(f'{c.name} {c.type}' for c in COLUMNS)})")
            conn.execute("CREATE INDEX cells_run ON cells (run)")
            conn.execute("CREATE INDEX cells_cell ON cells (cell, machine, stack)")
        return
    if not {"meta", "runs", "cells"} <= tables:
        raise HistoryError(f"{path} is not a bench history (tables {sorted(tables)}; expected meta, runs, cells)")
    row = conn.execute("SELECT value FROM meta WHERE key='history_schema'").fetchone()
    version = int(row[0]) if row and str(row[0]).isdigit() else None
    if version is None or version > HISTORY_SCHEMA:
        raise HistoryError(f"{path} has history layout {row[0] if row else 'unknown'}; this bench reads layouts "
                           f"1..{HISTORY_SCHEMA} (update bench, or collect into a new history)")
    have = {r[1] for r in conn.execute("PRAGMA table_info(cells)")}
    with conn:  # an older layout: columns added since are appended, empty for its rows
        for c in COLUMNS:
            if c.name not in have:
                conn.execute(f"ALTER TABLE cells ADD COLUMN {c.name} {c.type.replace(' NOT NULL', '')}")


def rows_of(df, run: str) -> list[tuple[Any, ...]]:
    """The ``cells`` rows (``COLUMNS`` order) of a collected DataFrame (``bench.results.collect.to_frame``)."""
    out = []
    for rec in df.to_dict("records"):
        rec["_run"] = run
        out.append(tuple(_value(c.get(rec)) for c in COLUMNS))
    return out


def append_run(path: Path, run: str, df, source: str = "") -> int:
    """Put ``run``'s rows (a collected DataFrame) into the history at ``path`` (created when absent); a run
    already there has its rows replaced, in one transaction (no duplicates, never half a run). Returns the
    number of rows written.

    Raises:
        HistoryError: see ``_connect``; an empty run name.
    """
    if not run:
        raise HistoryError("a run needs a name")
    rows = rows_of(df, run)
    status = col(Record, "status")
    ok = int((df[status] == "ok").sum()) if status in df else 0
    at = [c.name for c in COLUMNS].index("started_utc")
    started = [r[at] for r in rows if r[at]]
    names = ", ".join(c.name for c in COLUMNS)
    with closing(_connect(path, create=True)) as conn, conn:
        conn.execute("DELETE FROM cells WHERE run = ?", (run,))
        conn.executemany(f"INSERT INTO cells ({names}) VALUES ({', '.join('?' * len(COLUMNS))})", rows)
        conn.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?)",
                     (run, datetime.now(timezone.utc).isoformat(timespec="seconds"), min(started, default=None),
                      len(rows), ok, source))
    return len(rows)


def load(path: Path, run: str | None = None):
    """The history's cells as a DataFrame (``COLUMNS``), ordered by run start then stack; ``run``: that run's.

    Raises:
        HistoryError: see ``_connect``; ``run`` is not in the history.
    """
    import pandas as pd

    with closing(_connect(path, create=False)) as conn:
        if run is not None:
            known = [r[0] for r in conn.execute("SELECT run FROM runs ORDER BY started_utc")]
            if run not in known:
                raise HistoryError(f"no run {run!r} in {path} (runs: {', '.join(known) or 'none'})")
        sql = ("SELECT cells.* FROM cells JOIN runs USING (run)" + (" WHERE run = ?" if run else "")
               + " ORDER BY runs.started_utc, cells.run, cells.stack, cells.cell_id")
        return pd.read_sql(sql, conn, params=(run,) if run else None)


def runs(path: Path):
    """The history's runs as a DataFrame (run, collected_utc, started_utc, cells, ok, source), oldest first.

    Raises:
        HistoryError: see ``_connect``.
    """
    import pandas as pd

    with closing(_connect(path, create=False)) as conn:
        return pd.read_sql("SELECT * FROM runs ORDER BY started_utc, run", conn)


# ---- Bencher Metric Format ---------------------------------------------------------------------------------------

#: Bencher's Latency is in nanoseconds, Throughput in operations/s (bencher.dev/docs/how-to/track-custom-benchmarks):
#: ms/step is exported as ns per step, examples/s as throughput (one operation = one example).
NS_PER_MS = 1e6


def measured_rows(cells):
    """The rows of ``cells`` (a ``load``ed frame) a trend or a BMF export can show: ok, with ms/step."""
    return cells[(cells["status"] == "ok") & cells[_MS].notna()]


def point_rows(cells):
    """What a trend point or BMF benchmark stands for (``report.history.trend_groups``, ``to_bmf``): ``measured_rows``
    of a known machine model (``known_machine``), one per run, cell and model (``one_per_run``)."""
    return one_per_run((ok := measured_rows(cells))[known_machine(ok)])


def to_bmf(cells) -> dict[str, dict[str, dict[str, float]]]:
    """Bencher Metric Format JSON (the schema at https://bencher.dev/bmf.json, bencherdev/bencher
    services/console/public/v0/bmf.json) of ``point_rows(cells)`` (``load``; one run, or the names clash):
    ``{benchmark: {measure: {"value", "lower_value", "upper_value"}}}``.

    The benchmark is the cell id (stack included), plus `` @ <machine>`` when the rows span several machines (a
    Bencher testbed stands for one machine: pass ``--testbed`` to ``bencher run``). Measures: ``latency``, ms/step
    x 1e6 (ns per step), with the repeats' min and max as its bounds when there are two or more; ``throughput``,
    examples/s (fit: ``samples_per_s``; paper suite: ``examples_per_s``). Rows without ms/step, or whose record
    names no machine model, are left out; a cell the run measured on several GPUs of one model is one benchmark,
    the rows' median (``one_per_run``).

    Raises:
        HistoryError: two rows would get the same benchmark name (several runs given).
    """
    ok = point_rows(cells)
    several = ok["machine"].nunique() > 1
    out: dict[str, dict[str, dict[str, float]]] = {}
    for r in ok.to_dict("records"):
        name = f"{r['cell_id']} @ {r['machine']}" if several else str(r["cell_id"])
        if name in out:
            raise HistoryError(f"benchmark {name!r} appears twice (export one run: --run)")
        latency = {"value": float(r[_MS]) * NS_PER_MS}
        lo, hi = _value(r.get("ms_per_step_repeats_min")), _value(r.get("ms_per_step_repeats_max"))
        if (_value(r.get("repeats_n")) or 0) >= 2 and lo is not None and hi is not None:
            latency |= {"lower_value": float(lo) * NS_PER_MS, "upper_value": float(hi) * NS_PER_MS}
        out[name] = {"latency": latency}
        throughput = _value(r.get("samples_per_s"))
        throughput = throughput if throughput is not None else _value(r.get("examples_per_s"))
        if throughput is not None:
            out[name]["throughput"] = {"value": float(throughput)}
    return out

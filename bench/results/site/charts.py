"""The results site's charts (plotly; its JavaScript is written once into the site, ``assets/plotly.min.js``).

Each function takes what the report's sections compute (``bench.results.site.cells.cell_rows``, ``paper_rows``,
the ``PairTable`` of Versions and Keras overhead, the history's ``trend_groups``) and returns a figure, or None when
no row has the values it needs (nothing is invented). A point's ``customdata`` is its record's index in the run,
which a click on it opens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.core.stacks import STACKS
from bench.results.compare import CI_LEVEL
from bench.results.report.classic import LEGACY_MARK, s_per_epoch
from bench.results.report.common import _num
from bench.results.report.paper import ours_ms, paper_columns, paper_rows
from bench.results.report.versions import ratio_text
from bench.results.schema import Metrics, col

#: plotly's options for every chart: no logo; the charts follow the width of their box.
CONFIG = {"displaylogo": False, "responsive": True}


def _stack_order(stacks: set[str]) -> list[str]:
    return [s for s in STACKS if s in stacks] + sorted(stacks - set(STACKS))


def _layout(fig: Any, title: str, y_title: str, log: bool = False) -> Any:
    fig.update_layout(title=title, scattermode="group", legend_title_text="stack", height=420,
                      margin={"l": 60, "r": 20, "t": 60, "b": 110}, template="plotly_white")
    fig.update_yaxes(title_text=y_title, type="log" if log else "linear")
    return fig


def ms_chart(rows: list[dict[str, Any]], title: str) -> Any:
    """ms/step (the median across repeats) per cell and stack, with each median's ``CI_LEVEL`` bootstrap interval
    (``median_ci``; none for one repeat), log scale; ``rows``: ``cell_rows`` of one suite. None without an ok row."""
    import plotly.graph_objects as go

    ok = [r for r in rows if r["stats"]]
    if not ok:
        return None
    fig = go.Figure()
    for sid in _stack_order({r["stack"] for r in ok}):
        mine = [r for r in ok if r["stack"] == sid]
        s = [r["stats"] for r in mine]
        fig.add_trace(go.Scatter(
            x=[r["label"] for r in mine], y=[x["ms"] for x in s], name=sid, mode="markers",
            customdata=[r["index"] for r in mine],
            error_y={"type": "data", "symmetric": False, "array": [(x["high"] - x["ms"]) if x["low"] is not None
                                                                   else 0 for x in s],
                     "arrayminus": [(x["ms"] - x["low"]) if x["low"] is not None else 0 for x in s]},
            text=[f"n={x['n']}" + (f", {CI_LEVEL:.0%} CI [{x['low']:.2f}, {x['high']:.2f}]" if x["low"] is not None
                                   else ", one repeat: no interval") for x in s],
            hovertemplate="%{x}<br>%{y:.2f} ms/step, %{text}<extra>" + sid + "</extra>"))
    return _layout(fig, title, "ms/step (log scale)", log=True)


def metric_chart(df, rows: list[dict[str, Any]], metric: str, title: str, y_title: str, scale: float = 1.0) -> Any:
    """One value per cell and stack (``metrics.<metric>`` of ok rows, times ``scale``), e.g. J/epoch or MFU; None
    where no ok row has it."""
    column = col(Metrics, metric)
    if column not in df.columns:
        return None
    return _value_chart(rows, lambda r: (_num(df.loc[r["index"], column]), False), title, y_title, scale)


def s_per_epoch_chart(df, rows: list[dict[str, Any]], title: str) -> Any:
    """The 2017 metric, s/epoch, per cell and stack, as the report's classic table reads it (``s_per_epoch``:
    ``metrics.fit_call_s_per_epoch``; a record of schema 3 or older, its ``fit_s_per_epoch``, drawn as its own
    open-marker trace named with ``LEGACY_MARK``, since it is another quantity); None where no ok row has either."""
    return _value_chart(rows, lambda r: s_per_epoch(df.loc[r["index"]]), title, "s/epoch")


def _value_chart(rows: list[dict[str, Any]], value: Callable[[dict[str, Any]], tuple[float | None, bool]],
                 title: str, y_title: str, scale: float = 1.0) -> Any:
    """One point per ok cell of ``rows`` that ``value`` gives a number (value, legacy), one trace per stack (and per
    stack a trace of its legacy values, marked ``LEGACY_MARK``); None without a point."""
    import plotly.graph_objects as go

    found = [(r, v * scale, legacy) for r in rows if r["stats"] for v, legacy in [value(r)] if v is not None]
    if not found:
        return None
    fig = go.Figure()
    for sid in _stack_order({r["stack"] for r, _, _ in found}):
        for legacy in (False, True):
            mine = [(r, v) for r, v, old in found if r["stack"] == sid and old == legacy]
            if not mine:
                continue
            name = f"{sid} {LEGACY_MARK} (schema 3: fit_s_per_epoch)" if legacy else sid
            fig.add_trace(go.Scatter(x=[r["label"] for r, _ in mine], y=[v for _, v in mine], name=name,
                                     mode="markers", customdata=[r["index"] for r, _ in mine],
                                     marker={"symbol": "circle-open", "size": 10} if legacy else None,
                                     hovertemplate="%{x}<br>%{y:.3g}<extra>" + name + "</extra>"))
    return _layout(fig, title, y_title)


def paper_chart(df) -> Any:
    """The paper rows' ms/step, ours (filled) beside the published A100 value (open) per stack; None without an
    ok paper cell."""
    import plotly.graph_objects as go

    rows = paper_rows(df)
    keras_cols, other_cols = paper_columns(df)
    fig = go.Figure()
    for sid in keras_cols + other_cols:
        name = lambda r: f"{r['label']} {r['task']} bs{r['batch']}"  # noqa: E731
        ours = [(name(r), ours_ms(r["ours"][sid]), r["ours"][sid]) for r in rows]
        ours = [(x, v, c) for x, v, c in ours if v is not None]
        pub = [(name(r), r["published"][sid]) for r in rows if r["published"][sid] is not None and
               any(ours_ms(c) is not None for c in r["ours"].values())]
        if ours:
            fig.add_trace(go.Scatter(x=[x for x, _, _ in ours], y=[v for _, v, _ in ours], mode="markers",
                                     name=f"{sid} (ours)", customdata=[int(c.name) for _, _, c in ours]))
        if ours and pub:
            fig.add_trace(go.Scatter(x=[x for x, _ in pub], y=[v for _, v in pub], mode="markers",
                                     marker={"symbol": "circle-open", "size": 10}, name=f"{sid} (published A100)"))
    if not fig.data:
        return None
    return _layout(fig, "Keras 3 benchmark: ms/step, ours beside the published A100 value", "ms/step (log scale)",
                   log=True)


def pair_chart(tables: list[Any], title: str) -> Any:
    """A forest plot of ``PairTable`` rows: candidate/base ratio of ms/step with its interval, 1 marked; None
    without a row."""
    import plotly.graph_objects as go

    points = [(t, r) for t in tables for r in t.rows if r["stats"].ratio is not None]
    if not points:
        return None
    fig = go.Figure()
    for t in tables:
        mine = [r for tt, r in points if tt is t]
        s = [r["stats"] for r in mine]
        fig.add_trace(go.Scatter(
            y=[f"{r['label']}" for r in mine], x=[x.ratio for x in s], mode="markers", name=f"{t.candidate} / {t.base}",
            error_x={"type": "data", "symmetric": False,
                     "array": [(x.ci_high - x.ratio) if x.ci_high is not None else 0 for x in s],
                     "arrayminus": [(x.ratio - x.ci_low) if x.ci_low is not None else 0 for x in s]},
            text=[f"{ratio_text(x)}, {x.time_verdict}" for x in s],
            hovertemplate="%{y}<br>%{text}<extra>" + f"{t.candidate} / {t.base}" + "</extra>"))
    fig.add_vline(x=1.0, line_dash="dot")
    fig.update_layout(title=title, scattermode="group", height=max(300, 60 * len(points) + 140),
                      margin={"l": 220, "r": 20, "t": 60, "b": 50}, template="plotly_white", legend_title_text="pair")
    fig.update_xaxes(title_text=f"ms/step ratio, {CI_LEVEL:.0%} CI (> 1: candidate slower)")
    return fig


def trend_chart(cell: str, machine: str, rows) -> Any:
    """ms/step of one cell on one machine model across runs (x: the runs in date order), one line per stack, bars
    from the repeats' min to max where a row has 2 or more repeats, a point of several rows' median saying so (as
    ``report.history.trend_plot``)."""
    import plotly.graph_objects as go

    order = list(rows.groupby("run")["started_utc"].min().sort_values(kind="stable").index)
    starts = rows.groupby("run")["started_utc"].min()
    fig = go.Figure()
    for sid in _stack_order(set(rows["stack"])):
        g = rows[rows["stack"] == sid].sort_values("started_utc")
        ms = list(g["ms_per_step_mean"])
        n = list(g["repeats_n"].fillna(0))
        lo = [y - m if k >= 2 and m == m else 0.0 for y, m, k in zip(ms, g["ms_per_step_repeats_min"], n, strict=True)]
        hi = [m - y if k >= 2 and m == m else 0.0 for y, m, k in zip(ms, g["ms_per_step_repeats_max"], n, strict=True)]
        fig.add_trace(go.Scatter(
            x=list(g["run"]), y=ms, name=sid, mode="lines+markers",
            error_y={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo},
            text=[v + (f", median of {k} rows" if k > 1 else "") for v, k in
                  zip(g["versions"].fillna(""), g["rows"] if "rows" in g.columns else [1] * len(g), strict=True)],
            hovertemplate="%{x}<br>%{y:.2f} ms/step<br>%{text}<extra>"
            + sid + "</extra>"))
    # the runs as categories in date order, each labelled with its start (run names are long: in the hover)
    fig.update_xaxes(categoryorder="array", categoryarray=order, tickvals=order,
                     ticktext=[str(starts[r])[:16].replace("T", " ") for r in order])
    return _layout(fig, f"{cell}<br>on {machine}", "ms/step (bars: min-max across repeats)")


def chart_html(fig: Any, div_id: str) -> str:
    """A figure as an HTML fragment that draws itself with the page's plotly.min.js (none inlined, none from a
    CDN)."""
    import plotly.io as pio

    return pio.to_html(fig, full_html=False, include_plotlyjs=False, include_mathjax=False, div_id=div_id,
                       config=CONFIG)

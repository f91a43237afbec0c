"""The ``profile`` block from a profiled window's spans (``bench.instruments.profile.spans``): how busy the device was,
the top ops by self time, and the time by category (``bench.core.opcategories``), the same on every stack.

What counts as the device's work: on a GPU, the kernels, copies and memsets the profiler saw on the device
(``DEVICE`` spans), each its own duration (kernels do not nest); on a CPU, the CPU is the device and its work is
the framework's ops (``OP`` spans: ATen ops, TensorFlow ops, XLA thunks), each its self time (its length less the
ops nested in it on the same thread). The device is busy while any of its work runs (the union of their
intervals); the rest of the window it waits for the host (Python, the framework's dispatch, launches, the input
pipeline's hand-over): ``host_fraction = 1 - device_busy_fraction``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from bench.core.opcategories import KEYS, OTHER, classify
from bench.instruments.profile.spans import DEVICE, MARK, OP, Span

#: The annotation around the profiled steps (``bench.instruments.profile.window.Window``): the window the summary
#: covers.
WINDOW = "dlbench.profiled_steps"
#: How many ops ``top_ops`` lists.
TOP = 10
#: Timestamps closer than this (µs) count as equal when nesting spans (the profilers round to ns or µs).
EPS_US = 1e-3


def window_of(spans: list[Span], name: str = WINDOW) -> tuple[float, float]:
    """(start, end) µs of the mark ``name``; without one, of all spans that are not marks.

    Raises:
        ValueError: no span at all.
    """
    marks = [s for s in spans if s.kind == MARK and s.name == name]
    chosen = marks[:1] or [s for s in spans if s.kind != MARK]
    if not chosen:
        raise ValueError("the profile holds no span")
    return min(s.start_us for s in chosen), max(s.end_us for s in chosen)


def _clip(span: Span, w0: float, w1: float) -> float:
    return max(0.0, min(span.end_us, w1) - max(span.start_us, w0))


def union_us(intervals: Iterable[tuple[float, float]]) -> float:
    """Total length (µs) of the union of ``(start, end)`` intervals."""
    total, cur_start, cur_end = 0.0, None, None
    for start, end in sorted(intervals):
        if cur_end is None or start > cur_end:
            if cur_end is not None and cur_start is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_end is not None and cur_start is not None:
        total += cur_end - cur_start
    return total


def nest(spans: list[Span]) -> tuple[dict[int, str], dict[int, float], dict[int, str]]:
    """Per host span (by index into ``spans``): its scope (its lane, the names of the spans around it on that lane,
    its own scope, joined by ``|``), for an op the time of the ops nested directly in it (µs), and the name of the
    innermost op around it (a kernel launch's: the ATen op that launched the kernel)."""
    scopes: dict[int, str] = {}
    nested: dict[int, float] = {}
    owner: dict[int, str] = {}
    lanes: dict[str, list[int]] = {}
    for i, s in enumerate(spans):
        if s.kind != DEVICE:
            lanes.setdefault(s.lane, []).append(i)
    for lane, idx in lanes.items():
        open_: list[int] = []  # the spans begun and not yet ended, outermost first
        for i in sorted(idx, key=lambda k: (spans[k].start_us, -spans[k].dur_us)):
            s = spans[i]
            open_ = [j for j in open_ if spans[j].end_us > s.start_us + EPS_US]
            around = [j for j in open_ if spans[j].end_us >= s.end_us - EPS_US]  # a span crossing s's end is no parent
            names = [spans[j].name if not spans[j].scope else f"{spans[j].name}|{spans[j].scope}" for j in around]
            scopes[i] = "|".join([lane, *names, s.scope] if s.scope else [lane, *names])
            parent = next((j for j in reversed(around) if spans[j].kind == OP), None)
            if parent is not None:
                owner[i] = spans[parent].name
                if s.kind == OP:
                    nested[parent] = nested.get(parent, 0.0) + s.dur_us
            open_.append(i)
    return scopes, nested, owner


def _device_work(spans: list[Span], scopes: dict[int, str], owner: dict[int, str]) -> list[tuple[Span, str, float]]:
    """Each device span with its scope (its launch's on the host, same correlation id, then its own) and, when it
    has no detail of its own, the op that launched it as its detail (``opcategories``: a kernel no name rule
    places goes by its op)."""
    launches = {s.link: i for i, s in enumerate(spans) if s.kind != DEVICE and s.link is not None}
    out = []
    for s in spans:
        if s.kind != DEVICE:
            continue
        at = launches.get(s.link) if s.link is not None else None
        launch = "" if at is None else scopes[at] + "|" + spans[at].name
        scope = "|".join(p for p in (launch, s.lane, s.scope) if p)
        detail = s.detail or ("" if at is None else owner.get(at, ""))
        out.append((s if detail == s.detail else replace(s, detail=detail), scope, s.dur_us))
    return out


def work(spans: list[Span]) -> tuple[str, list[tuple[Span, str, float]]]:
    """The device's work in ``spans`` (module docstring): ("gpu" or "cpu", [(span, scope, self µs)])."""
    scopes, nested, owner = nest(spans)
    if any(s.kind == DEVICE for s in spans):
        return "gpu", _device_work(spans, scopes, owner)
    return "cpu", [(s, scopes[i], max(0.0, s.dur_us - nested.get(i, 0.0)))
                   for i, s in enumerate(spans) if s.kind == OP]


def summarise(spans: list[Span], steps: int, window: str = WINDOW) -> dict[str, Any]:
    """The ``profile`` block's measured part (``bench.results.schema.Profile``) of ``steps`` profiled steps.

    Self times count inside the window only (a span that crosses its edge counts its part inside); the categories
    hold every op's self time, so they sum to ``op_ms``; ``other_ops`` lists every name no rule placed.

    Raises:
        ValueError: no span at all, or a window of zero length.
    """
    w0, w1 = window_of(spans, window)
    if w1 <= w0:
        raise ValueError("the profiled window has no length")
    device, done = work(spans)
    totals: dict[tuple[str, str], list[float]] = {}
    intervals = []
    for span, scope, self_us in done:
        inside = _clip(span, w0, w1)
        if inside <= 0:
            continue
        share = inside / span.dur_us if span.dur_us > 0 else 1.0
        key = (span.name, classify(span.name, span.detail, scope))
        calls_ms = totals.setdefault(key, [0.0, 0.0])
        calls_ms[0] += 1
        calls_ms[1] += self_us * share / 1000.0
        intervals.append((max(span.start_us, w0), min(span.end_us, w1)))
    return _block(device, steps, (w1 - w0) / 1000.0, union_us(intervals) / 1000.0, totals)


def _block(device: str, steps: int, window_ms: float, busy_ms: float,
           totals: dict[tuple[str, str], list[float]]) -> dict[str, Any]:
    op_ms = sum(ms for _, ms in totals.values())
    categories = dict.fromkeys(KEYS, 0.0)
    for (_, cat), (_, ms) in totals.items():
        categories[cat] += ms
    ranked = sorted(totals.items(), key=lambda kv: -kv[1][1])
    busy = min(1.0, busy_ms / window_ms)
    return {
        "device": device, "steps": steps, "window_ms": window_ms, "busy_ms": busy_ms,
        "device_busy_fraction": busy, "host_fraction": 1.0 - busy, "op_ms": op_ms, "ops": int(sum(
            calls for calls, _ in totals.values())), "categories": categories,
        "top_ops": [{"name": name, "category": cat, "calls": int(calls), "ms": ms,
                     "share": ms / op_ms if op_ms else None} for (name, cat), (calls, ms) in ranked[:TOP]],
        "other_ops": [{"name": name, "calls": int(calls), "ms": ms}
                      for (name, cat), (calls, ms) in ranked if cat == OTHER],
    }

"""What derives from the declarations: ``walk`` (every declared field as a dotted name), ``col`` and ``spread_col``
(the CSV column of a declared field, or a ``KeyError``), the metrics per rule across repeats, the knobs' docs
(``bench.core.knobs``) and ``describe`` (what ``bench fields`` prints)."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from bench.core.knobs import DOCS
from bench.results.schema.blocks import Metrics, Spread, Stats
from bench.results.schema.declare import Rule, rule_of, unit_of
from bench.results.schema.effective import EffectiveSettings
from bench.results.schema.record import Record


@dataclass(frozen=True)
class Declared:
    """One declared field: its dotted CSV ``name``, ``help``, ``unit``, ``rule`` and Python ``type``."""

    name: str
    help: str
    unit: str
    rule: str
    type: Any


def fields_of(cls: type[BaseModel]) -> dict[str, FieldInfo]:
    """JSON key (the alias where there is one) -> declared field of ``cls``, in declaration order."""
    return {f.alias or n: f for n, f in cls.model_fields.items()}


def block_of(tp: Any) -> type[BaseModel] | None:
    """The declared block class inside an annotation (``Metrics | None`` -> Metrics), else None."""
    candidates = typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,)
    return next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)


def walk(cls: type[BaseModel] = Record, prefix: str = "") -> Iterator[Declared]:
    """Every declared field of ``cls`` and its blocks, depth first in declaration order, as dotted names."""
    for key, f in fields_of(cls).items():
        name = f"{prefix}{key}"
        block = block_of(f.annotation)
        if block is Spread:  # repeats.<metric>: one Spread per metric, described once (``describe``)
            continue
        if block is not None:
            yield from walk(block, f"{name}.")
        else:
            yield Declared(name, f.description or "", unit_of(f), rule_of(f), f.annotation)


#: Where each block class sits in the record (``col`` builds names from it).
_PREFIX: dict[type, str] = {Record: ""}


def _index(cls: type[BaseModel], prefix: str) -> None:
    for key, f in fields_of(cls).items():
        block = block_of(f.annotation)
        if block is not None and block not in (Stats, Spread):
            _PREFIX.setdefault(block, f"{prefix}{key}.")
            _index(block, f"{prefix}{key}.")


_index(Record, "")


def col(block: type[BaseModel], name: str, *sub: str) -> str:
    """The dotted CSV column of a declared field: ``col(Metrics, "mfu")`` -> ``"metrics.mfu"``; ``sub`` goes into a
    declared sub-block (``col(Telemetry, "power_w", "mean")``) or an open mapping (``col(Env, "packages", "jax")``).

    Raises:
        KeyError: ``name`` (or a ``sub`` of a declared sub-block) is not declared, so a renamed field breaks the
            report at import and its tests.
    """
    if block is Spread:
        raise KeyError("repeats.<metric> columns: use spread_col(metric, stat)")
    if block not in _PREFIX:
        raise KeyError(f"{getattr(block, '__name__', block)!r} is not a block of the record")
    fields = fields_of(block)
    if name not in fields:
        raise KeyError(f"{block.__name__} declares no field {name!r}")
    inner = block_of(fields[name].annotation)
    if sub and inner is not None:
        return col(inner, sub[0], *sub[1:]) if inner in _PREFIX else _sub(inner, _PREFIX[block] + name, sub)
    return ".".join((f"{_PREFIX[block]}{name}", *sub))


def _sub(block: type[BaseModel], prefix: str, sub: tuple[str, ...]) -> str:
    if sub[0] not in fields_of(block) or len(sub) > 1:
        raise KeyError(f"{block.__name__} declares no field {'.'.join(sub)!r}")
    return f"{prefix}.{sub[0]}"


def spread_col(metric: str, stat: str) -> str:
    """``repeats.<metric>.<stat>``, for a metric that has a spread (rule median or derived) and a ``Spread`` field.

    Raises:
        KeyError: the metric has no spread or ``stat`` is not a ``Spread`` field.
    """
    if metric not in aggregated() + derived_metrics():
        raise KeyError(f"metrics.{metric} has no spread across repeats (rule median or derived)")
    if stat not in fields_of(Spread):
        raise KeyError(f"Spread declares no field {stat!r}")
    return f"repeats.{metric}.{stat}"


def metrics_with(rule: Rule) -> tuple[str, ...]:
    """The ``Metrics`` fields with ``rule``, in declaration order."""
    return tuple(k for k, f in fields_of(Metrics).items() if rule_of(f) == rule)


def aggregated() -> tuple[str, ...]:
    """Metrics the aggregation of repeats takes as the median across repeats."""
    return metrics_with("median")


def derived_metrics() -> tuple[str, ...]:
    """Metrics recomputed from the aggregated ones (``bench.results.derived``)."""
    return metrics_with("derived")


def knob_docs() -> dict[str, str]:
    """Knob name -> its help, from ``bench.core.knobs``' settings classes (the epoch engines' text first), as the
    settings block declares them (``EffectiveSettings``' knob fields). The knobs stay standard-library dataclasses
    (``bench.core.settings.knob``): the host's bare python3 reads them."""
    return dict(DOCS)


def setting_col(name: str) -> str:
    """``settings.<name>`` for a knob (``bench.core.knobs``) or another declared effective setting.

    Raises:
        KeyError: ``EffectiveSettings`` declares no ``name``.
    """
    return col(EffectiveSettings, name)


def declared_names() -> list[str]:
    """Every declared dotted name in declaration order (the knobs first in the settings block)."""
    return [d.name for d in walk()]


def describe() -> list[tuple[str, str]]:
    """(dotted name, "meaning [unit; rule across repeats]") for every declared field, knobs included: what ``bench
    fields`` prints."""
    rows = []
    knobs = {setting_col(k) for k in knob_docs()}
    for d in walk():
        tag = "; ".join(x for x in (d.unit, f"repeats: {d.rule}") if x)
        rows.append((f"{d.name} (knob)" if d.name in knobs else d.name, f"{d.help} [{tag}]"))
    rows += [("repeats.<metric>.<values|median|min|max|cv>", "every metric with rule median or derived, across "
              "repeats (Spread)"),
             ("settings_requested.* / env.packages.* / env.env_vars.* / env.framework_cuda.* / history.* / "
              "telemetry.unsupported.*", "open mappings: their keys vary by stack and engine")]
    return rows

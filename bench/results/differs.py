"""What differs between two rows ``bench compare`` matched by their requested names (``bench.results.compare``'s
``differs`` column): the machine, and the settings in effect and data that both rows record; and what could not be
compared because a row does not record it (its ``unknown`` column: the machine's model, and the settings in effect
and data that one row holds a value for and the other does not, such as a field added to the record since the other
ran)."""

from __future__ import annotations

import math
from typing import Any

from bench.core.stacks import STACKS
from bench.results.history import UNKNOWN_MACHINES, machine_label
from bench.results.rows import present
from bench.results.schema import Data, EffectiveSettings, Env, Record, col
from bench.results.schema.effective import TF32_SWITCHES, placement_now

_SETTINGS = col(Record, "settings")
_DEVICE = col(Record, "device")
_PLACEMENT = col(EffectiveSettings, "train_data_placement")


def _same(x: Any, y: Any) -> bool:
    """Equal as recorded: numbers by value within float32's precision (a CSV gives 1.0 where a JSON line gives 1;
    a float32 learning rate reads back as 0.0010000000474974513), the rest by text (numpy's True is True)."""
    try:
        return math.isclose(float(x), float(y), rel_tol=1e-6)
    except (TypeError, ValueError):
        return str(x) == str(y)


#: ``EffectiveSettings``' field names and JSON keys (``model_config``'s Python name is ``built_config``).
_EFFECTIVE = frozenset(n for name, f in EffectiveSettings.model_fields.items() for n in (name, f.alias) if n)
#: Outside ``settings``: what else shapes a cell's time under one cell id (the driver; the training and validation
#: set sizes and the data's source, which an older default changed).
_OTHER = (col(Env, "gpu", "driver"), *(col(Data, k) for k in ("source", "n_train", "n_val")))
#: How ``unknown`` says that a row holds no value for a column the other row holds (``unrecorded``).
NOT_RECORDED = "has no column for"


def _shown(x: Any) -> str:
    """``x`` as the records wrote it: a whole number read back from a CSV as a float (``0.0`` for the ``0`` a
    JSON record holds) without its ``.0``."""
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


def _in_effect(column: str, device: Any, knobs: set[str]) -> bool:
    """A column that matching by name assumes equal: a ``settings.*`` column of a setting in effect (every field of
    ``EffectiveSettings``, its nested columns and the framework versions too) or one of ``_OTHER``. Not a TF32
    switch on a CPU row (no TF32 there: ``TF32_SWITCHES``), nor a knob of ``knobs`` (the variants compared differ in
    it by design)."""
    if column in _OTHER:
        return True
    name = column[len(_SETTINGS) + 1:].split(".", 1)[0] if column.startswith(_SETTINGS + ".") else ""
    if name not in _EFFECTIVE or name in knobs:
        return False
    return not (device == "cpu" and name in TF32_SWITCHES)


def _machines(ra, rb, key: dict[str, Any]) -> tuple[str, str]:
    """Each row's ``machine_label``; ``key``, the match's key columns, gives the device where the rows are indexed by
    it."""
    return machine_label({**ra.to_dict(), **key}), machine_label({**rb.to_dict(), **key})


def _as_now(row, column: str, key: dict[str, Any]) -> Any:
    """The row's value of ``column``, an older wording of the Keras data placement read as today's
    (``placement_now``, on the row's Keras backend, else its Keras stack's)."""
    value = row[column]
    if column != _PLACEMENT:
        return value
    backend = row.get(col(EffectiveSettings, "keras_backend"))
    if not present(backend):
        stack = STACKS.get(str(key.get(col(Record, "stack"), row.get(col(Record, "stack")))))
        backend = stack.backend if stack is not None and stack.family == "keras" else None
    return placement_now(value, backend)


def _compared(ra, rb, device: Any, knobs: set[str] | None) -> list[str]:
    """The columns of either row that are ``_in_effect`` (the union: a column one CSV lacks is one its rows do not
    record), in A's order then B's."""
    return [c for c in dict.fromkeys([*ra.index, *rb.index]) if _in_effect(str(c), device, knobs or set())]


def differences(ra, rb, key: dict[str, Any] | None = None, knobs: set[str] | None = None) -> str:
    """What differs between two matched rows (``compare``'s ``differs``), '' when nothing: the machine
    (``bench.results.history.machine_label``: the GPU model, or the CPU model) where both rows name it (a row that
    names none is ``unknown_between``'s, never a difference) and each column ``_in_effect`` both rows record, as
    ``name: A -> B`` (one that a row holds no value for is ``unknown_between``'s too), an older wording of the same
    data placement not counted (``placement_now``); matching is by requested names (variant, inputs), so a variant
    named alike may have run otherwise (``jit_compile`` resolved to XLA on one side, another driver, an older default
    set size), and its ratio then holds that. ``key``: the match's key columns; ``knobs``: the knobs the two variants
    compared differ in (not named)."""
    out = []
    key = key or {}
    machines = _machines(ra, rb, key)
    if machines[0] != machines[1] and not set(machines) & set(UNKNOWN_MACHINES):
        out.append(f"machine: {machines[0]} -> {machines[1]}")
    device = key.get(_DEVICE, ra.get(_DEVICE))
    for c in _compared(ra, rb, device, knobs):
        x, y = ra.get(c), rb.get(c)
        if present(x) and present(y) and not _same(_as_now(ra, c, key), _as_now(rb, c, key)):
            out.append(f"{c}: {_shown(x)} -> {_shown(y)}")
    return "; ".join(out)


def unknown_between(ra, rb, key: dict[str, Any] | None = None, knobs: set[str] | None = None) -> str:
    """What could not be compared between two matched rows (``compare``'s ``unknown``), '' when nothing: the machine
    where a row's record names no GPU (or CPU) model (``UNKNOWN_MACHINES``), e.g. ``machine: B records no GPU model
    (A: NVIDIA H100 80GB HBM3)``; then what one row holds a value for and the other does not (``unrecorded``),
    e.g. ``settings B has no column for: steps_per_call``. Unknown is no difference: they may or may not have
    run alike. ``key``, ``knobs``: as ``differences``'."""
    return "; ".join(p for p in (_unknown_machine(ra, rb, key or {}), unrecorded(ra, rb, key, knobs)) if p)


def _unknown_machine(ra, rb, key: dict[str, Any]) -> str:
    """``unknown_between``'s machine part, '' when both rows name their machine's model."""
    names = dict(zip("AB", _machines(ra, rb, key), strict=True))
    unknown = [side for side, label in names.items() if label in UNKNOWN_MACHINES]
    if not unknown:
        return ""
    what = "GPU" if names[unknown[0]] == UNKNOWN_MACHINES[0] else "CPU"
    known = [f"{side}: {label}" for side, label in names.items() if side not in unknown]
    return f"machine: {' and '.join(unknown)} record{'s' if len(unknown) == 1 else ''} no {what} model" + (
        f" ({known[0]})" if known else "")


def unrecorded(ra, rb, key: dict[str, Any] | None = None, knobs: set[str] | None = None) -> str:
    """The columns ``_in_effect`` that one row holds a value for and the other row's CSV has no column for (its
    records are from before the field, ``settings.steps_per_call`` before 2026-11-27), one phrase a side:
    ``settings B has no column for: steps_per_call, optimizer`` (a setting by its field, the whole field where the
    CSV has none of its nested columns), then ``B has no column for: data.source`` for the other columns; '' when
    none. A column a CSV has but a row leaves empty is a value, not unknown: the engine records some settings only
    where they apply (``augmentation`` when augmenting, a torchvision pipeline's ``normalize``), and for others a null
    is what the field's help says it means (``NVIDIA_TF32_OVERRIDE`` unset). Matching by name assumed them equal;
    ``differences`` cannot say."""
    compared = _compared(ra, rb, (key or {}).get(_DEVICE, ra.get(_DEVICE)), knobs)
    phrases = []
    for side, row, other in (("A", ra, rb), ("B", rb, ra)):
        missing = [c for c in compared if present(other.get(c)) and c not in row.index]
        fields = _fields(row, [c for c in missing if c.startswith(_SETTINGS + ".")])
        if fields:
            phrases.append(f"{_SETTINGS} {side} {NOT_RECORDED}: {', '.join(fields)}")
        rest = [c for c in missing if not c.startswith(_SETTINGS + ".")]
        if rest:
            phrases.append(f"{side} {NOT_RECORDED}: {', '.join(rest)}")
    return "; ".join(phrases)


def _fields(row, columns: list[str]) -> list[str]:
    """``settings.*`` ``columns`` that ``row``'s CSV has no column for, named without ``settings.``: a nested column
    by its field alone where the CSV has none of that field's columns (``optimizer``, not its ten keys), else by its
    path (``optimizer.weight_decay``); each name once, in order."""
    prefix = _SETTINGS + "."
    held = {str(c)[len(prefix):].split(".", 1)[0] for c in row.index if str(c).startswith(prefix)}
    names = [c[len(prefix):] for c in columns]
    return list(dict.fromkeys(n if n.split(".", 1)[0] in held else n.split(".", 1)[0] for n in names))


def knobs_between(ra, rb) -> set[str]:
    """The knobs two rows requested differently (``settings_requested.*``): what two variants compared differ in."""
    prefix = col(Record, "settings_requested") + "."
    knobs = set()
    for c in {c for r in (ra, rb) for c in r.index if str(c).startswith(prefix)}:
        x, y = ra.get(c), rb.get(c)
        if (present(x) or present(y)) and not (present(x) and present(y) and _same(x, y)):
            knobs.add(c[len(prefix):])
    return knobs

"""Sweeps: a YAML grid of settings expanded into one cell per (stack, variant).

A grid file names a workload and task, and per engine (``keras``, ``torch``, ``jax``) a ``baseline`` (the
out-of-the-box configuration) and a ``grid``: a list of blocks, each block a product of its axes; the
union is de-duplicated. A ``stacks:`` mapping may replace the engine block for one stack id. Settings
equal to the engine's defaults are dropped before naming, so equivalent variants collapse into one.
Invalid combinations are not removed here: they become ``unsupported`` records with the reason.
The default grid (``bench/run/sweeps/tuning.yaml``) is the tuning suite.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from bench.core.knobs import EPOCH_ENGINES, normalise, variant_name
from bench.core.stacks import STACKS, get_stack

DEFAULT_GRIDS = {"tuning": "tuning.yaml"}


class GridError(ValueError):
    """A grid file that cannot be read or has the wrong structure."""


@dataclass(frozen=True)
class Variant:
    """One configuration of a sweep for one stack. settings: normalised knob values."""

    name: str
    settings: dict[str, Any]
    baseline: bool


@dataclass
class Grid:
    """A parsed sweep. blocks: per engine or stack id, ``{"baseline": {...}, "grid": [{axis: [values]}]}``."""

    name: str
    workload: str
    task: str
    blocks: dict[str, dict[str, Any]]
    source: str

    def block_for(self, stack_id: str) -> dict[str, Any] | None:
        return self.blocks.get(stack_id) or self.blocks.get(get_stack(stack_id).family)

    def variants(self, stack_id: str) -> list[Variant]:
        """The stack's variants, baseline first, de-duplicated after normalisation."""
        block = self.block_for(stack_id)
        if block is None:
            return []
        engine = get_stack(stack_id).family
        base = normalise(engine, block.get("baseline") or {})
        out = {variant_name(base): Variant(variant_name(base), base, True)}
        for axes in block.get("grid") or []:
            keys = list(axes)
            for combo in itertools.product(*(axes[k] for k in keys)):
                s = normalise(engine, dict(zip(keys, combo, strict=True)))
                out.setdefault(variant_name(s), Variant(variant_name(s), s, False))
        return list(out.values())


def _blocks(data: dict[str, Any]) -> dict[str, Any]:
    """Engine blocks, then stack blocks (a stack id's block replaces its engine's for that stack)."""
    return {**(data.get("engines") or {}), **(data.get("stacks") or {})}


def _check_structure(data: Any, source: str) -> None:
    if not isinstance(data, dict):
        raise GridError(f"{source}: a grid file is a mapping with workload, task and engines/stacks")
    for key in ("workload", "task"):
        if not isinstance(data.get(key), str):
            raise GridError(f"{source}: missing or invalid {key!r}")
    blocks = _blocks(data)
    if not blocks:
        raise GridError(f"{source}: no 'engines' or 'stacks' block")
    for name, block in blocks.items():
        if name not in EPOCH_ENGINES and name not in STACKS:
            raise GridError(f"{source}: {name!r} is neither an engine ({', '.join(EPOCH_ENGINES)}) nor a stack id")
        if not isinstance(block, dict) or not isinstance(block.get("grid", []), list) \
                or not isinstance(block.get("baseline") or {}, dict):
            raise GridError(f"{source}: {name}: expected baseline (mapping) and grid (list of mappings)")
        for i, axes in enumerate(block.get("grid") or []):
            if not isinstance(axes, dict) or not all(isinstance(v, list) and v for v in axes.values()):
                raise GridError(f"{source}: {name}: grid block {i + 1} must map each knob to a non-empty list")


def parse(text: str, source: str) -> Grid:
    """Parse grid YAML. Raises GridError on invalid YAML or structure."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise GridError(f"{source}: not valid YAML ({str(e).splitlines()[0]})") from None
    _check_structure(data, source)
    return Grid(str(data.get("name") or Path(source).stem), data["workload"], data["task"], _blocks(data), source)


def load(path: Path) -> Grid:
    """Read a grid file. Raises GridError when it cannot be read or parsed."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise GridError(f"cannot read {path}: {e.strerror or e}") from None
    return parse(text, str(path))


def default_grid(suite: str) -> Grid:
    """The grid packaged for ``suite`` (``tuning``). Raises KeyError for a suite without one."""
    text = resources.files("bench.run.sweeps").joinpath(DEFAULT_GRIDS[suite]).read_text()
    return parse(text, f"bench/run/sweeps/{DEFAULT_GRIDS[suite]}")

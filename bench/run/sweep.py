"""Sweeps: a YAML grid of settings expanded into one cell per (stack, variant).

A grid file names a workload and task, and per engine (``keras``, ``torch``, ``jax``) a ``baseline`` (the
out-of-the-box configuration) and a ``grid``: a list of blocks, each block a product of its axes; the
union is de-duplicated. A ``stacks:`` mapping may replace the engine block for one stack id. Settings
equal to the engine's defaults are dropped before naming, so equivalent variants collapse into one.
The file is read by pydantic models (``GridFile``, ``EngineBlock``): an unknown key, a value of the wrong type, a knob
the block's engine does not have or a value it never allows is a ``GridError`` naming where. Combinations of valid
values are not removed here: one a stack cannot run becomes an ``unsupported`` record with the reason.
The default grid (``bench/run/sweeps/tuning.yaml``) is the tuning suite.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from bench.core.knobs import EPOCH_ENGINES, normalise, settings_class, variant_name
from bench.core.stacks import STACKS, get_stack
from bench.core.words import DEFAULT_GRIDS as DEFAULT_GRIDS  # the grid suites, re-exported

#: A knob's value as YAML gives it, kept as given (``true`` a bool, ``512`` an int, ``"on"`` a string: the models are
#: strict, so nothing is coerced).
Value = bool | int | float | str
#: One block of a grid: knob -> the values it takes (at least one); the block is their product.
Axes = dict[str, Annotated[list[Value], Field(min_length=1)]]
#: The keys of ``engines:``, the epoch engines (``bench.core.knobs.EPOCH_ENGINES``), and of ``stacks:``, stack ids.
if TYPE_CHECKING:  # mypy cannot read a Literal made from a tuple at run time; pydantic checks the keys against it
    Engine: TypeAlias = str
    StackId: TypeAlias = str
else:
    Engine = Literal[EPOCH_ENGINES]
    StackId = Literal[tuple(STACKS)]


class GridError(ValueError):
    """A grid file that cannot be read or has the wrong structure (the message is one line naming where)."""


class _Strict(BaseModel):
    # strict: YAML's types as given, never coerced ("512" stays a string, and is refused where a number belongs)
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class EngineBlock(_Strict):
    """One engine's (or stack's) part of a grid: ``baseline`` (knob -> value, the out-of-the-box configuration; empty:
    every knob at its default) and ``grid`` (a list of ``Axes``). A null section is an empty one."""

    baseline: dict[str, Value] = {}
    grid: list[Axes] = []

    @field_validator("baseline", "grid", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any, info: ValidationInfo) -> Any:
        return _empty(cls, info.field_name) if value is None else value

    def problem(self, engine: str) -> str | None:
        """The first knob of this block that ``engine``'s epoch settings do not have, or a value they never allow
        (``bench.core.settings.Settings.problem``), with where it is; None when every one is valid. A value equal to
        the knob's default is valid (the cell never receives it: ``bench.core.knobs.normalise``)."""
        def check(settings: dict[str, Any]) -> str | None:
            return settings_class(engine).problem(normalise(engine, settings))

        found = check(self.baseline)
        if found:
            return f"baseline: {found}"
        for i, axes in enumerate(self.grid):
            for knob, values in axes.items():
                found = next((p for v in values if (p := check({knob: v}))), None)
                if found:
                    return f"grid[{i}]: {found}"
        return None


class GridFile(_Strict):
    """A grid file: ``name`` (default: the file's stem), ``workload``, ``task``, ``engines`` (epoch engine -> its
    ``EngineBlock``) and ``stacks`` (stack id -> an ``EngineBlock`` that replaces its engine's for that stack); at
    least one block, each block's knobs valid for its engine. A null section is an empty one."""

    name: str | None = None
    workload: str
    task: str
    engines: dict[Engine, EngineBlock] = {}
    stacks: dict[StackId, EngineBlock] = {}

    @field_validator("engines", "stacks", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any, info: ValidationInfo) -> Any:
        return _empty(cls, info.field_name) if value is None else value

    @model_validator(mode="after")
    def _knobs_valid(self) -> GridFile:
        if not self.blocks():
            raise ValueError("no 'engines' or 'stacks' block")
        for section, blocks in (("engines", self.engines), ("stacks", self.stacks)):
            for name, block in blocks.items():
                found = block.problem(name if section == "engines" else get_stack(name).family)
                if found:
                    raise ValueError(f"{section}.{name}.{found}")
        return self

    def blocks(self) -> dict[str, EngineBlock]:
        """Engine blocks, then stack blocks (a stack id's block replaces its engine's for that stack)."""
        return {**self.engines, **self.stacks}


def _empty(model: type[BaseModel], field: str | None) -> Any:
    """The empty value of a section (its declared default) that YAML gave as null."""
    return model.model_fields[field or ""].get_default(call_default_factory=True)


@dataclass(frozen=True)
class Variant:
    """One configuration of a sweep for one stack. settings: normalised knob values."""

    name: str
    settings: dict[str, Any]
    baseline: bool


@dataclass(frozen=True)
class Grid:
    """A parsed sweep: its ``name``, ``workload``, ``task``, ``blocks`` (engine or stack id -> ``EngineBlock``: engine
    blocks, then stack blocks, ``GridFile.blocks``) and the file it came from (``source``)."""

    name: str
    workload: str
    task: str
    blocks: dict[str, EngineBlock]
    source: str

    def block_for(self, stack_id: str) -> EngineBlock | None:
        """The stack's block: its own, else its engine's (None: the grid has none for it)."""
        return self.blocks.get(stack_id) or self.blocks.get(get_stack(stack_id).family)

    def variants(self, stack_id: str) -> list[Variant]:
        """The stack's variants, baseline first, de-duplicated after normalisation."""
        block = self.block_for(stack_id)
        if block is None:
            return []
        engine = get_stack(stack_id).family
        base = normalise(engine, block.baseline)
        out = {variant_name(base): Variant(variant_name(base), base, True)}
        for axes in block.grid:
            keys = list(axes)
            for combo in itertools.product(*(axes[k] for k in keys)):
                s = normalise(engine, dict(zip(keys, combo, strict=True)))
                out.setdefault(variant_name(s), Variant(variant_name(s), s, False))
        return list(out.values())


#: pydantic's messages for the errors a grid's author meets, in the grid's words.
_MESSAGES = {"model_type": "expected a mapping", "dict_type": "expected a mapping", "list_type": "expected a list"}


#: The names pydantic puts after a value's place when it tried each type of ``Value`` in turn.
_VALUE_TYPES = {t.__name__ for t in get_args(Value)}


def _place(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """An error's place in the grid: a knob value's place without the ``Value`` type pydantic tried there."""
    return loc[:-1] if loc and loc[-1] in _VALUE_TYPES else loc


def _one_line(e: ValidationError, source: str) -> str:
    """pydantic's first error as one line: the file, where (``engines.torch.grid[0].compile``) and what. A knob value
    of no ``Value`` type fails once per type; that is one error, said once, with the value given."""
    errors = e.errors(include_url=False)
    err = errors[0]
    loc = _place(err["loc"])
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc if p != "[key]").lstrip(".")
    count = len({_place(x["loc"]) for x in errors})
    if loc != err["loc"]:
        message = f"{json.dumps(err['input'], default=str)} is not a knob value (a string, a number or true/false)"
    elif err["type"] == "extra_forbidden":
        what, model = ("a grid file", GridFile) if len(err["loc"]) == 1 else ("a block", EngineBlock)
        message = f"unknown key ({what} has {', '.join(model.model_fields)})"
    else:
        message = _MESSAGES.get(err["type"], err["msg"].removeprefix("Value error, "))
    more = f" (and {count - 1} more)" if count > 1 else ""
    return f"{source}: {where + ': ' if where else ''}{message}{more}"


def parse(text: str, source: str) -> Grid:
    """Parse grid YAML (``GridFile``). Raises GridError on invalid YAML or a grid that does not fit its model."""
    import yaml

    try:
        data = GridFile.model_validate(yaml.safe_load(text))
    except yaml.YAMLError as e:
        raise GridError(f"{source}: not valid YAML ({str(e).splitlines()[0]})") from None
    except ValidationError as e:
        raise GridError(_one_line(e, source)) from None
    return Grid(data.name or Path(source).stem, data.workload, data.task, data.blocks(), source)


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

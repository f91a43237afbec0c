"""How a record field is declared: ``entry`` (a pydantic ``Field`` with the field's unit and rule across repeats)
and ``Block``, the base of every block of the record.

A field's declaration gives its meaning (``description``), its unit and its rule across repeats (``RULES``), the
last two in ``json_schema_extra``, so that the record's JSON schema (``Record.model_json_schema()``) carries them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

#: The record layout this code writes. 3: the layout is declared here (schema_version 2's records still load:
#: 3 only added fields and turned ``metrics.examples_per_j`` into a derived metric). 4: the 2017 metric is
#: ``metrics.fit_call_s_per_epoch`` (the whole training call over the epochs) and the epochs' spans' mean
#: ``metrics.fit_epoch_s_mean``; ``metrics.fit_s_per_epoch``, whose meaning changed between versions of the code, is
#: no longer written and stays readable in records of 3 and older (``bench fields`` says which meaning when).
SCHEMA_VERSION = 4
#: The oldest layout the collector reads.
OLDEST_SCHEMA = 1

Rule = Literal["median", "first", "sum", "any", "derived", "aggregation"]
#: What each rule across repeats means (``bench.results.repeats``).
RULES: dict[str, str] = {
    "median": "the median across repeats (values, median, min, max and cv kept in repeats.<field>)",
    "first": "repeat 1's value (or the first failing repeat's, for a cell that is not ok)",
    "sum": "summed over the repeats (in the repeats block)",
    "any": "true when any repeat's is (a cell is flagged when one of its repeats was)",
    "derived": "recomputed from the aggregated metrics (bench.results.derived), never carried from a repeat",
    "aggregation": "made by the aggregation of repeats itself (null or absent in a per-repeat record)",
}


def entry(help: str, unit: str = "", rule: Rule = "first", default: Any = None, alias: str | None = None) -> Any:
    """A record field: its meaning (``help``), unit (``ms``, ``s``, ``J``, ``W``, ``bytes``, ``FLOP/s``...; empty for
    a label or a count) and rule across repeats (``RULES``). ``default``: the value of an absent field (a mutable
    default is copied per instance). ``alias``: the JSON key, where it cannot be the Python name."""
    extra: JsonDict = {"unit": unit, "rule": rule}
    if isinstance(default, (dict, list)):
        return Field(default_factory=lambda: type(default)(default), description=help, json_schema_extra=extra,
                     alias=alias)
    return Field(default=default, description=help, json_schema_extra=extra, alias=alias)


def unit_of(field: Any) -> str:
    """The declared unit of a pydantic ``FieldInfo`` made by ``entry`` (empty for a label or a count)."""
    return str((field.json_schema_extra or {}).get("unit", ""))


def rule_of(field: Any) -> str:
    """The declared rule across repeats of a pydantic ``FieldInfo`` made by ``entry``."""
    return str((field.json_schema_extra or {}).get("rule", "first"))


class Block(BaseModel):
    """Base of every block of the record. Code writes declared fields only: the constructor and attribute
    assignment refuse a name the block does not declare, and an assigned value is validated against its declared
    type (``validate_assignment``). A record read back (``model_validate``) keeps keys its block does not declare
    (``extra="allow"``: older records' fields, written after the declared ones), so records of every schema version
    load as written. ``model_fields_set`` holds the fields that were given (constructor arguments, later
    assignments), so ``model_dump(exclude_unset=True)`` writes what a producer gave: a null that was set stays a
    null, a field never set stays absent (records of schema 3 keep their keys)."""

    # serialize_by_alias: a field whose JSON key is not its Python name (``EffectiveSettings.built_config``)
    model_config = ConfigDict(extra="allow", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True,
                              protected_namespaces=(), validate_assignment=True)

    def __init__(self, **given: Any) -> None:
        """A block built by code (the engines: ``Metrics(**timer.summary(...))``) from its declared fields only.

        Raises:
            TypeError: a keyword the block does not declare (a typo fails in the engine, not in the collector;
                a record read back, ``model_validate``, keeps its undeclared keys).
            pydantic.ValidationError: a value that does not fit its declared type.
        """
        unknown = sorted(set(given) - _json_keys(type(self)) - set(type(self).model_fields))
        if unknown:
            raise TypeError(f"{type(self).__name__} declares no field {', '.join(map(repr, unknown))}")
        super().__init__(**given)

    # pydantic calls an overridden __init__ for nested blocks too (model_validate of a record read back); marked as
    # its base __init__, this check stays the constructor's alone, so records keep their undeclared keys
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    def __setattr__(self, name: str, value: Any) -> None:
        """Assign a declared field, validated (``validate_assignment``).

        Raises:
            AttributeError: ``name`` is not a declared field (with ``extra="allow"``, pydantic would keep it as an
                undeclared key).
            pydantic.ValidationError: a value that does not fit the field's declared type.
        """
        if name not in type(self).model_fields and not name.startswith("_"):
            raise AttributeError(f"{type(self).__name__} declares no field {name!r}")
        super().__setattr__(name, value)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        """pydantic's ``model_dump``, without its serializer warnings by default: a settings block of another schema
        version loads as recorded (``Record._settings_as_recorded``), its values off their declared types, and is
        written as it was read, not warned about."""
        kwargs.setdefault("warnings", False)
        return super().model_dump(**kwargs)


def _json_keys(cls: type[BaseModel]) -> set[str]:
    return {f.alias or n for n, f in cls.model_fields.items()}

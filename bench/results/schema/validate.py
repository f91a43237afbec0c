"""``problems``: what in a record's JSON does not fit the declarations, by pydantic's strict validation."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from bench.results.schema.effective import EffectiveSettings
from bench.results.schema.introspect import block_of, fields_of
from bench.results.schema.record import Record


def problems(record: dict[str, Any]) -> list[str]:
    """What in ``record`` (a record's JSON object) does not fit the declared schema (empty when it fits): a declared
    field of the wrong JSON type, a block that is not an object, each named once by its dotted name. Strict: an int
    fits a float, a bool fits no number, a string no number. Undeclared keys are allowed. The settings block is
    checked as a mapping only (its knobs' values changed type across schema versions, e.g. tf32 was a bool in
    version 2)."""
    try:
        Record.model_validate(record, strict=True)
    except ValidationError as e:
        out: list[str] = []
        for err in e.errors():
            message = _named(record, err["loc"])
            if message and message not in out:
                out.append(message)
        return out
    return []


def _named(record: dict[str, Any], loc: tuple[int | str, ...]) -> str | None:
    """The problem at pydantic's error location ``loc``, walked along the declared fields only (a union member's
    tag or a list index ends the walk: the field holding it is named); None inside the settings block."""
    cls: type[BaseModel] | None = Record
    value: Any = record
    path: list[str] = []
    annotation: Any = None
    for part in loc:
        fields = fields_of(cls) if cls is not None else {}
        if not isinstance(part, str) or part not in fields or not isinstance(value, dict):
            break
        if cls is EffectiveSettings:
            return None
        path.append(part)
        value, annotation = value.get(part), fields[part].annotation
        cls = block_of(annotation)
    shown = getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
    return f"{'.'.join(path)} is {'null' if value is None else type(value).__name__}, declared {shown}"

"""The result record: one JSON file per cell, written atomically.

Its layout is declared in ``bench.results.schema`` (one dataclass per block); ``FIELDS`` lists every field with its
meaning, unit and rule across repeats (``bench fields``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.results.cell import Cell
from bench.results.schema import OLDEST_SCHEMA, REQUIRED, SCHEMA_VERSION, STATUSES, Record, describe, problems
from bench.results.schema import EffectiveSettings as Settings

#: Statuses a resumed run does not repeat (a failure is retried on the next run).
FINAL_STATUSES = ("ok", "unsupported")

#: Every field of a record and what it means (``bench fields``): derived from the declarations in
#: ``bench.results.schema``.
FIELDS: dict[str, str] = dict(describe())


def new_record(cell: Cell) -> dict[str, Any]:
    """A record skeleton for ``cell`` with every top-level field present (status ``failed``): the knobs it asks for
    in ``settings_requested``, and ``settings`` (what was in effect) empty until an engine reports what it ran, so
    that a cell that fails, is unsupported or is killed before it does says no setting took effect."""
    return {
        "schema_version": SCHEMA_VERSION,
        "cell_id": cell.id,
        "stack": cell.stack,
        "suite": cell.suite,
        "workload": cell.workload,
        "task": cell.task,
        "size": cell.size,
        "variant": cell.variant,
        "device": cell.device,
        "status": "failed",
        "reason": None,
        "batch_size": cell.inputs.batch_size if cell.inputs is not None else None,
        "data": {},
        "settings": {},
        "settings_requested": dict(cell.settings),
        "baseline": cell.baseline,
        "repeat": cell.repeat,
        "schedule": cell.schedule,
        "metrics": {},
        "telemetry": {},
        "history": {},
        "model": {},
        "memory": {},
        "process": {},
        "env": {},
        "notes": [],
        "started_utc": None,
        "finished_utc": None,
    }


#: The ``settings`` field the runner sets itself, whatever the cell's engine did (``bench.run.runner``).
RUNNER_SETTINGS = ("compile_cache",)


def without_requested_settings(rec: Record) -> Record:
    """``rec`` with a ``settings`` block that says only what took effect. Until 2026-11-27 ``new_record`` filled
    ``settings`` with the knobs the cell asked for, so a record whose engine never reported (a cell that failed,
    was unsupported or was killed) held them as if in effect: a record that is not ``ok`` whose ``settings`` are
    exactly its ``settings_requested`` (besides ``RUNNER_SETTINGS``) keeps only ``RUNNER_SETTINGS`` there (the
    knobs stay in ``settings_requested``). Any other record as it is: an engine's block holds every knob."""
    if rec.status == "ok" or rec.settings is None:
        return rec
    given = rec.settings.model_dump(exclude_unset=True)
    knobs = {k: v for k, v in given.items() if k not in RUNNER_SETTINGS}
    if knobs and knobs == rec.settings_requested:
        rec.settings = Settings(**{k: v for k, v in given.items() if k in RUNNER_SETTINGS})
    return rec


class RecordError(ValueError):
    """A result file that is not a complete, valid record."""


def load_record(path: Path) -> Record:
    """Load and validate one result file as a typed ``Record`` (pydantic's strict ``model_validate``: a value keeps
    its JSON type, so ``model_dump(exclude_unset=True)`` gives back the file's JSON; undeclared keys are kept).

    Raises:
        RecordError: unreadable JSON, not an object, missing required fields, unknown status, a schema version this
            code does not read (newer than ``SCHEMA_VERSION``), or a declared field of the wrong type
            (``bench.results.schema.problems``; the first few are named).
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RecordError(f"not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise RecordError("not a JSON object")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise RecordError(f"missing fields: {', '.join(missing)}")
    version = data["schema_version"]
    if not isinstance(version, int) or isinstance(version, bool) or not OLDEST_SCHEMA <= version <= SCHEMA_VERSION:
        raise RecordError(f"unsupported schema_version {version!r}")
    if data["status"] not in STATUSES:
        raise RecordError(f"unknown status {data['status']!r}")
    wrong = problems(data)
    if wrong:
        raise RecordError(f"does not fit schema {SCHEMA_VERSION}: {'; '.join(wrong[:3])}"
                          + (f" (and {len(wrong) - 3} more)" if len(wrong) > 3 else ""))
    return Record.model_validate(data, strict=True)


def read_record(path: Path) -> dict[str, Any]:
    """One result file's JSON (a mapping), validated as ``load_record`` does: for code that reads a record as its
    JSON (tests, scripts); the runner and the collector take the typed ``Record``.

    Raises:
        RecordError: see ``load_record``.
    """
    return load_record(path).model_dump(exclude_unset=True)


#: Sub-directory of ``OUT/<stack>/`` holding per-repeat records (the collector reads only cell records).
REPEATS_DIR = "repeats"


def result_path(out_dir: Path, cell: Cell) -> Path:
    """Where the record of ``cell`` lives inside a run directory: ``OUT/<stack>/<cell_id>.json``, or
    ``OUT/<stack>/repeats/<cell_id>__r<k>.json`` for repeat k."""
    if cell.repeat is None:
        return Path(out_dir) / cell.stack / f"{cell.id}.json"
    return Path(out_dir) / cell.stack / REPEATS_DIR / f"{cell.run_id}.json"

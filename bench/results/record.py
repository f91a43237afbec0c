"""The result record: one JSON file per cell, written atomically.

Its layout is declared in ``bench.results.schema`` (one dataclass per block); ``FIELDS`` lists every field with its
meaning, unit and rule across repeats (``bench fields``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.core.atomic import write_json_atomic  # noqa: F401  (records are written with it: part of this API)
from bench.results.schema import OLDEST_SCHEMA, REQUIRED, SCHEMA_VERSION, STATUSES, describe, problems

__all__ = ["FIELDS", "FINAL_STATUSES", "REPEATS_DIR", "REQUIRED", "SCHEMA_VERSION", "STATUSES", "Cell", "RecordError",
           "new_record", "read_record", "result_path", "write_json_atomic"]

#: Statuses a resumed run does not repeat (a failure is retried on the next run).
FINAL_STATUSES = ("ok", "unsupported")

#: Every field of a record and what it means (``bench fields``): derived from the declarations in
#: ``bench.results.schema``.
FIELDS: dict[str, str] = dict(describe())


@dataclass(frozen=True)
class Cell:
    """One unit of work: a workload's task on a stack, at a size, with a set of settings.

    Attributes:
        stack: stack id. suite: suite name. workload: workload name. task: e.g. ``fit``.
        size: ``smoke`` (tiny, CI) or ``full`` (published sizes).
        device: ``cpu`` or ``gpu`` (already resolved, never ``auto``).
        variant: name of the settings set; ``default`` is the stack's out-of-the-box configuration.
        settings: knob overrides for this variant (e.g. ``{"jit_compile": True}``).
        batch_size / epochs: overrides of the workload's defaults (None keeps them).
        timeout_s: wall-clock limit for the cell's process (s).
        baseline: this variant is the stack's out-of-the-box configuration in a sweep.
        repeat: 1-based index of an independent repeat (None when the cell is not repeated).
        telemetry_samples: also write the raw GPU telemetry samples to ``<run_id>.telemetry.csv``.
        steps / seq_len: overrides of a step-timed workload's timed steps and sequence length (None keeps
            the published values).
        data: where a fit cell's data may come from (``bench.run.datasets.DATA_CHOICES``; ``auto``: real, and
            synthetic only at smoke size).
        schedule: where this repeat ran in ``make bench-all``'s rounds (``bench.host.rounds.schedule``: seed,
            round, rounds, the round's stack order, position), None outside rounds.
    """

    stack: str
    suite: str
    workload: str
    task: str
    size: str
    device: str
    variant: str = "default"
    settings: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    batch_size: int | None = None
    epochs: int | None = None
    timeout_s: float = 600.0
    baseline: bool = False
    repeat: int | None = None
    telemetry_samples: bool = False
    steps: int | None = None
    seq_len: int | None = None
    schedule: dict[str, Any] | None = field(default=None, hash=False, compare=False)
    data: str = "auto"

    @property
    def id(self) -> str:
        """The cell's identity across repeats (also its final record's file name)."""
        return "__".join((self.stack, self.suite, self.workload, self.task, self.size, self.variant))

    @property
    def run_id(self) -> str:
        """``id``, with ``__r<k>`` for repeat k of a repeated cell."""
        return self.id if self.repeat is None else f"{self.id}__r{self.repeat}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Cell:
        return cls(**data)


def new_record(cell: Cell) -> dict[str, Any]:
    """A record skeleton for ``cell`` with every top-level field present (status ``failed``)."""
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
        "batch_size": cell.batch_size,
        "data": {},
        "settings": dict(cell.settings),
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


class RecordError(ValueError):
    """A result file that is not a complete, valid record."""


def read_record(path: Path) -> dict[str, Any]:
    """Load and validate one result file.

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
    return data


#: Sub-directory of ``OUT/<stack>/`` holding per-repeat records (the collector reads only cell records).
REPEATS_DIR = "repeats"


def result_path(out_dir: Path, cell: Cell) -> Path:
    """Where the record of ``cell`` lives inside a run directory: ``OUT/<stack>/<cell_id>.json``, or
    ``OUT/<stack>/repeats/<cell_id>__r<k>.json`` for repeat k."""
    if cell.repeat is None:
        return Path(out_dir) / cell.stack / f"{cell.id}.json"
    return Path(out_dir) / cell.stack / REPEATS_DIR / f"{cell.run_id}.json"

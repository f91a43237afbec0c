"""A ``bench run`` in process against a fake worker: the worker writes an ok record of the cell it is given
(1 ms per step, its ``epochs`` of 0.1 s, at its batch size) without training anything. The ``fake_worker`` fixture
(tests/conftest.py) puts it in the real worker's place."""

import textwrap

import pytest

from bench.cli import main

FAKE = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from bench.results.cell import Cell
    from bench.core.atomic import write_json_atomic
    from bench.results.record import new_record
    cell = Cell.from_dict(json.load(open(sys.argv[1])))
    rec = new_record(cell)
    epochs = cell.inputs.epochs
    rec.update(status="ok", data={"source": "synthetic", "requested": cell.inputs.data},
               metrics={"ms_per_step_mean": 1.0, "first_epoch_s": 0.1, "epoch_s": [0.1] * epochs})
    write_json_atomic(Path(sys.argv[2]), rec)
""")


def bench(*args: str) -> int:
    """``bench *args`` in this process; its exit code."""
    with pytest.raises(SystemExit) as e:
        main(list(args))
    return e.value.code


def run_one_of(commit: str):
    """A stand-in for ``bench.run.runner.run_one``: writes an ok record of its cell (repeat) made by code ``commit``
    (``env.git_commit``), 1 ms per step, without a process; returns it."""
    from bench.results.record import new_record
    from bench.results.schema import Record

    def run_one(rcell, folder, cooldown=None):
        rec = {**new_record(rcell), "status": "ok", "env": {"git_commit": commit}, "repeat": rcell.repeat,
               "metrics": {"ms_per_step_mean": 1.0, "ms_per_step_p50": 1.0, "first_epoch_s": 1.0}}
        record = Record.model_validate(rec, strict=True)
        folder.write(rcell, record)
        return record

    return run_one

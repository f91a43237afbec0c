"""The GPU between cells (bench.instruments.gpu_state) against a fake pynvml: other processes, cooldown, no NVML."""


import pytest

from bench.instruments import gpu_state
from bench.results.cell import Cell
from bench.results.record import read_record, result_path
from bench.run import runner
from tests.helpers.fake_nvml import GpuBetweenCells as FakeNvml


def test_snapshot_counts_other_processes_and_the_note_says_the_numbers_are_invalid():
    s = gpu_state.snapshot(FakeNvml([40], procs=[(123, 2**30), (456, 2**29)]))
    assert s["available"] and s["processes"] == 2 and s["process_memory_bytes"] == 3 * 2**29
    assert "2 other compute process(es)" in gpu_state.busy_note(s) and "1536 MiB" in gpu_state.busy_note(s)
    assert gpu_state.busy_note(gpu_state.snapshot(FakeNvml([40]))) is None


def test_snapshot_without_nvml_says_why():
    class Broken:
        def nvmlInit(self):
            raise OSError("libnvidia-ml.so.1 not found")

    s = gpu_state.snapshot(Broken())
    assert s["available"] is False and "libnvidia-ml" in s["reason"]
    assert gpu_state.busy_note(s) is None


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


def test_cooldown_waits_until_within_delta_of_idle_and_records_it():
    clock = Clock()
    nv = FakeNvml([40, 55, 50, 45, 43, 42])  # idle 40 at the run's start; the next cell starts at 55
    cd = gpu_state.Cooldown(60, delta_c=3.0, nv=nv, sleep=clock.sleep, clock=clock, poll_s=2.0)
    block = cd.wait()
    assert block["idle_c"] == 40 and block["target_c"] == 43 and block["start_c"] == 55
    assert block["end_c"] == 43 and block["reached"] is True and block["waited_s"] == pytest.approx(6.0)


def test_cooldown_stops_at_its_cap():
    clock = Clock()
    nv = FakeNvml([40, 70])  # never cools
    block = gpu_state.Cooldown(5, nv=nv, sleep=clock.sleep, clock=clock, poll_s=2.0).wait()
    assert block["reached"] is False and block["end_c"] == 70 and block["waited_s"] == pytest.approx(6.0)


def test_gpu_cells_record_the_gpu_before_them(tmp_path, monkeypatch):
    """The runner's pre-cell check on a GPU cell (the worker is a stand-in that writes an ok record)."""
    import sys
    import textwrap

    script = tmp_path / "w.py"
    script.write_text(textwrap.dedent("""
        import json, sys, pathlib
        from bench.results.cell import Cell
        from bench.core.atomic import write_json_atomic
        from bench.results.record import new_record
        rec = new_record(Cell.from_dict(json.load(open(sys.argv[1]))))
        rec.update(status="ok", metrics={"ms_per_step_mean": 1.0, "first_epoch_s": 0.1})
        write_json_atomic(pathlib.Path(sys.argv[2]), rec)
    """))
    monkeypatch.setattr(runner, "WORKER", [sys.executable, str(script)])
    monkeypatch.setattr(runner, "cell_env", lambda *a, **k: {"PATH": "/usr/bin:/bin"})
    fake = FakeNvml([50], procs=[(99, 2**30)])
    monkeypatch.setattr(gpu_state, "snapshot", lambda nv=None, _f=gpu_state.snapshot: _f(fake))
    cell = Cell(stack="pytorch", suite="classic", workload="mnist_mlp", task="fit", size="smoke", device="gpu")
    runner.run_cells([cell], tmp_path)
    rec = read_record(result_path(tmp_path, cell))
    assert rec["gpu_before"]["processes"] == 1 and any("GPU busy" in n for n in rec["notes"])
    assert "cooldown" not in rec

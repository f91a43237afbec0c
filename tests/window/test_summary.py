"""window/summary.py, the GPU window's summary, on hand-built records: each column says what the record holds."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def summary_module():
    spec = importlib.util.spec_from_file_location("window_summary", ROOT / "window" / "summary.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record(cell_id: str, profile: dict | None) -> dict:
    rec = {"cell_id": cell_id, "status": "ok", "metrics": {"ms_per_step_mean": 5.0, "first_epoch_s": 1.0},
           "process": {"wall_s": 9.0}}
    return rec if profile is None else {**rec, "profile": profile}


def test_a_profile_that_failed_or_was_not_taken_is_not_a_yes(tmp_path: Path):
    """The profile column read ``profile.status``, a field the block does not have, and wrote "yes" for every
    record with a profile block: a profile that failed (``profile.reason``) said yes."""
    runs = tmp_path / "results" / "runs" / "r" / "pytorch"
    runs.mkdir(parents=True)
    recs = {"taken": record("taken", {"profiler": "torch.profiler 2.13", "steps": 5, "reason": None}),
            "failed": record("failed", {"reason": "RuntimeError: the profiler | broke\nsecond line"}),
            "unprofiled": record("unprofiled", None)}
    for name, rec in recs.items():
        (runs / f"{name}.json").write_text(json.dumps(rec))
    lines = summary_module().cells(summary_module().records(tmp_path))
    by_cell = {ln.split(" | ")[0].removeprefix("| "): ln.split(" | ")[5] for ln in lines[2:]}
    assert by_cell == {"taken": "yes", "failed": "no: RuntimeError: the profiler / broke", "unprofiled": "-"}


def test_the_heading_names_the_request_and_a_line_what_the_records_ran_on():
    """The heading printed the device and size the window was called with, as if the cells ran so: a line now says
    what the records hold, each place once."""
    m = summary_module()
    gpu = {"name": "NVIDIA H200", "driver": "580.159.04"}
    recs = [{**record(c, None), "device": "gpu", "env": {"gpu": gpu, "python": "3.12.3", "native": True}}
            for c in ("a", "b")]
    recs.append({**record("c", None), "device": "cpu", "env": {"gpu": {"available": False}, "python": "3.12.3"}})
    assert m.ran_on(recs) == ("Ran on, as the records say: gpu (NVIDIA H200, driver 580.159.04), Python 3.12.3, "
                              "native; cpu (no GPU recorded), Python 3.12.3")
    assert m.ran_on([]) == "Ran on, as the records say: no record"


def test_the_parts_and_cells_tables_are_written_by_one_table_writer(tmp_path: Path):
    """Both tables, pinned as the summary wrote them before they shared ``table``: one line per part of parts.tsv and
    per record, a reason's ``|`` and line break made one cell."""
    m = summary_module()
    (tmp_path / "parts.tsv").write_text("env\t0\t12\nclassic\t1\t150\n")
    assert m.parts(tmp_path) == ["| part | exit | seconds |", "| --- | --- | --- |", "| env | 0 | 12 |",
                                 "| classic | 1 | 150 |"]
    assert m.parts(tmp_path / "none") == ["| part | exit | seconds |", "| --- | --- | --- |"]
    failed = {"cell_id": "b", "status": "failed", "reason": "boom | bang\nsecond", "metrics": {"first_step_s": 3}}
    assert m.cells([record("a", {"reason": None}), failed]) == [
        "| cell | status | ms/step | first epoch/step s | process s | profile | reason |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        "| a | ok | 5 | 1 | 9.0 | yes |  |",
        "| b | failed | - | 3 | - | - | boom / bang |"]


def test_the_instruments_lines_read_what_the_selftest_and_fidelity_write(tmp_path: Path, capsys):
    """The self-test's and fidelity's JSON as their own writers build them on a GPU (``selftest.run.record``,
    ``fidelity.cadence_summary``), read by the summary: the GPU's name, the counts, each failed check with its
    numbers, each cadence's ratio to the hand loop; and the whole summary printed by ``main``."""
    from bench.run.fidelity import cadence_summary
    from bench.run.selftest import within
    from bench.run.selftest.run import record as selftest_record

    m = summary_module()
    results = tmp_path / "results"
    results.mkdir()
    checks = [within("energy", "torch", 95.0, 100.0, "J", 0.02, "counter vs integrated power"),
              within("barrier", "jax", 10.0, 10.0, "ms", 0.02, "timed vs wall")]
    gpu = {"available": True, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-a", "driver": "580.65.06"}
    (results / "selftest.json").write_text(json.dumps(selftest_record(checks, {}, "gpu", gpu, 42.4)))
    runs = [{"epoch_s": [9.0, 2.0, 2.0], "barriers": 3, "clock_reads": 3}]
    fidelity = {"stack": "pytorch", "workload": "mnist_mlp", "handloop_ms_per_step": 1.0,
                "cadences": {"epoch": cadence_summary(runs, 4000, 1.0)}}
    (results / "fidelity-pytorch.json").write_text(json.dumps(fidelity))
    assert m.instruments(tmp_path) == [
        "selftest on gpu (NVIDIA H100 80GB HBM3): {'pass': 1, 'fail': 1, 'n/a': 0}, 42 s",
        "- FAIL energy torch: measured 95, reference 100, ratio 0.9500: " + checks[0].reason,
        "fidelity pytorch mnist_mlp: free-running 1 ms/step; ratios epoch 1.0000"]
    assert m.main([str(tmp_path), "gpu", "smoke"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# GPU window: asked for gpu, size smoke\n") and "## Cells (0 ok of 0)" in out
    assert out.rstrip().endswith("(no logs/pip-freeze.txt)")


def test_the_host_packages_lines_name_each_listed_package_at_another_version(tmp_path: Path):
    m = summary_module()
    listed = m._pins(ROOT / "window" / "host-packages.txt")
    (name, version), *rest = sorted(listed.items())
    freeze = [f"{n.upper()}=={v}" for n, v in rest] + [f"{name.replace('-', '_')}==0.0.1  # older"]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "pip-freeze.txt").write_text("\n".join(freeze))
    assert m.host_packages(tmp_path) == [f"- {name}: listed {version}, host 0.0.1"]
    (tmp_path / "logs" / "pip-freeze.txt").write_text("\n".join(f"{n}=={v}" for n, v in listed.items()))
    assert m.host_packages(tmp_path) == ["- every listed package is at the host's version"]

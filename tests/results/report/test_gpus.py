"""Results from two machines: one CSV, a report that keeps the GPUs apart, GPU-hours and cost."""


import pandas as pd

from bench.core.atomic import write_json_atomic
from bench.results.cell import Cell
from bench.results.collect import collect
from bench.results.record import new_record, result_path
from bench.results.report import load_runs, write_report
from bench.results.report.gpus import gpu_groups, gpu_seconds
from tests.helpers.tables import has_cells, rows_starting


def machine(root, gpu, uuid, ms_by_stack, wall=100.0):
    """A result tree as one cloud job writes it: one ok classic cell per stack on one GPU."""
    for stack, ms in ms_by_stack.items():
        cell = Cell(stack=stack, suite="classic", workload="mnist_cnn", task="fit", size="full", device="gpu")
        rec = new_record(cell)
        rec.update(status="ok", batch_size=128, data={"source": "real"},
                   metrics={"ms_per_step_mean": ms, "first_epoch_s": 1.0},
                   env={"gpu": {"available": True, "name": gpu, "uuid": uuid}},
                   process={"wall_s": wall, "gpu_s": wall},
                   repeats={"n": 1, "gpu_s": wall, "process_wall_s": [wall]})
        write_json_atomic(result_path(root, cell), rec)


def test_two_machines_give_one_csv_and_a_report_that_never_mixes_their_gpus(tmp_path):
    runs = tmp_path / "runs" / "classic-full-gpu"
    machine(runs / "a100", "NVIDIA A100-SXM4-80GB", "GPU-aaaaaaaa-1111", {"keras3-jax": 2.0, "pytorch": 3.0})
    machine(runs / "h100", "NVIDIA H100 80GB HBM3", "GPU-bbbbbbbb-2222", {"keras3-jax": 1.0, "pytorch": 1.2})
    df, bad = collect(runs, tmp_path / "classic-full-gpu.csv")
    assert len(df) == 4 and not bad
    groups = gpu_groups(df)
    assert [label for label, _ in groups] == ["NVIDIA A100-SXM4-80GB (GPU-aaaaaaaa)",
                                              "NVIDIA H100 80GB HBM3 (GPU-bbbbbbbb)"]
    assert gpu_seconds(df) == 400.0
    report = write_report(load_runs([tmp_path / "classic-full-gpu.csv"])[0], tmp_path, price_per_hour=4.0)
    text = report.read_text()
    assert "## GPUs" in text and "never compared in one table" in text
    assert "- GPU time: 0.11 GPU-hours" in text and "$0.44 at $4 per GPU-hour (as given)" in text
    # the cross-GPU table: H100 / A100 per cell
    assert rows_starting(text, "classic") == [["classic", "mnist_cnn", "fit", "full", "default", "", "keras3-jax",
                                               "2.00", "1.00", "0.500"],
                                              ["classic", "mnist_cnn", "fit", "full", "default", "", "pytorch", "3.00",
                                               "1.20", "0.400"]]
    # one classic table per GPU, each with that GPU's numbers only
    a100, h100 = text.split("## GPU: NVIDIA A100")[1].split("## GPU: NVIDIA H100")
    assert has_cells(a100, ["mnist_cnn", "fit", "2.00", "3.00"]) and "1.20" not in a100.split("Classic suite")[1]
    assert has_cells(h100, ["mnist_cnn", "fit", "1.00", "1.20"])



def test_the_cross_gpu_table_never_takes_the_median_of_two_cells(tmp_path):
    """keras3-jax's default mnist_cnn cell (2.0 ms on the A100, 1.0 on the H100) and its batch-64 cell (6.0 on the
    A100 only): the cross-GPU line of the default cell is 2.00 / 1.00, 0.500. The old table keyed suite, workload,
    task, variant and stack, and took the median of both cells on the A100: 4.00, a ratio of 0.250."""
    runs = tmp_path / "runs" / "classic-full-gpu"
    machine(runs / "a100", "NVIDIA A100-SXM4-80GB", "GPU-aaaaaaaa-1111", {"keras3-jax": 2.0})
    machine(runs / "h100", "NVIDIA H100 80GB HBM3", "GPU-bbbbbbbb-2222", {"keras3-jax": 1.0})
    cell = Cell(stack="keras3-jax", suite="classic", workload="mnist_cnn", task="fit", size="full", device="gpu")
    rec = new_record(cell)
    rec.update(status="ok", batch_size=64, cell_id=f"{cell.id}__batch_size=64", metrics={"ms_per_step_mean": 6.0},
               env={"gpu": {"available": True, "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-aaaaaaaa-1111"}})
    write_json_atomic(runs / "a100" / "keras3-jax" / f"{rec['cell_id']}.json", rec)
    collect(runs, tmp_path / "classic-full-gpu.csv")
    text = write_report(load_runs([tmp_path / "classic-full-gpu.csv"])[0], tmp_path).read_text()
    assert rows_starting(text, "classic") == [["classic", "mnist_cnn", "fit", "full", "default", "", "keras3-jax",
                                               "2.00", "1.00", "0.500"]]


def test_each_gpu_section_lists_only_its_own_cells_that_did_not_run(tmp_path):
    """Two GPUs, each with a failed cell: each GPU's section lists its own failed cell, and each footnote is defined
    once in the report. The old report listed every note so far under each GPU: the H100's section repeated the
    A100's failed cell (its footnote [^1] defined twice) as if it had failed there."""
    runs = tmp_path / "runs" / "classic-full-gpu"
    machine(runs / "a100", "NVIDIA A100-SXM4-80GB", "GPU-aaaaaaaa-1111", {"keras3-jax": 2.0})
    machine(runs / "h100", "NVIDIA H100 80GB HBM3", "GPU-bbbbbbbb-2222", {"keras3-jax": 1.0})
    for sub, gpu, uuid, why in (("a100", "NVIDIA A100-SXM4-80GB", "GPU-aaaaaaaa-1111", "OOM on the A100"),
                                ("h100", "NVIDIA H100 80GB HBM3", "GPU-bbbbbbbb-2222", "timeout on the H100")):
        cell = Cell(stack="pytorch", suite="classic", workload="mnist_cnn", task="fit", size="full", device="gpu")
        rec = new_record(cell)
        rec.update(status="failed", reason=why, env={"gpu": {"available": True, "name": gpu, "uuid": uuid}})
        write_json_atomic(result_path(runs / sub, cell), rec)
    collect(runs, tmp_path / "classic-full-gpu.csv")
    text = write_report(load_runs([tmp_path / "classic-full-gpu.csv"])[0], tmp_path).read_text()
    a100, h100 = text.split("## GPU: NVIDIA H100")
    assert "[^1]: pytorch mnist_cnn default: failed: OOM on the A100" in a100 and "timeout on the H100" not in a100
    assert "[^2]: pytorch mnist_cnn default: failed: timeout on the H100" in h100 and "OOM on the A100" not in h100
    assert text.count("[^1]:") == 1 and text.count("[^2]:") == 1


def test_one_gpu_keeps_one_section_and_no_price_is_guessed(tmp_path):
    runs = tmp_path / "runs"
    machine(runs, "NVIDIA H100 80GB HBM3", "GPU-bbbbbbbb-2222", {"keras3-jax": 1.0})
    df, _ = collect(runs, tmp_path / "one.csv")
    assert len(gpu_groups(df)) == 1
    text = write_report(load_runs([tmp_path / "one.csv"])[0], tmp_path).read_text()
    assert "## GPUs" not in text and "- GPU time: 0.03 GPU-hours" in text and "$" not in text.split("GPU time")[1][:80]


def test_older_records_count_gpu_time_from_their_process_walls():
    df = pd.DataFrame([{"device": "gpu", "repeats.process_wall_s": [30.0, 60.0]},
                       {"device": "cpu", "repeats.process_wall_s": [99.0]}])
    assert gpu_seconds(df) == 90.0

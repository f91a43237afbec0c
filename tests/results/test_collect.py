import subprocess
import sys
from pathlib import Path

import pandas as pd

from bench.core.atomic import write_json_atomic
from bench.results.cell import Cell
from bench.results.collect import collect
from bench.results.record import new_record
from bench.results.rows import jsonl_path, read_rows


def record(stack, workload, status="ok", ms=2.0):
    c = Cell(stack=stack, suite="classic", workload=workload, task="fit", size="smoke", device="cpu")
    rec = new_record(c)
    rec.update(status=status, batch_size=32, notes=["CPU run"])
    if status == "ok":
        rec["metrics"] = {"ms_per_step_mean": ms, "ms_per_step_p50": ms, "first_epoch_s": 1.0}
        rec["history"] = {"loss": [1.0, 0.5]}
        rec["env"] = {"python": "3.11.7", "gpu": {"available": False}}
    else:
        rec["reason"] = "boom"
    return c, rec


def test_collect_merges_skips_bad_files_and_prints_pivot(tmp_path):
    runs = tmp_path / "run"
    for stack, wl, status, ms in [("pytorch", "mnist_mlp", "ok", 1.5), ("keras3-jax", "mnist_mlp", "ok", 2.5),
                                  ("pytorch", "mnist_cnn", "failed", 0)]:
        c, rec = record(stack, wl, status, ms)
        write_json_atomic(runs / stack / f"{c.id}.json", rec)
    (runs / "pytorch" / "broken.json").write_text('{"schema_version": 1, "stack": ')
    (runs / "pytorch" / ".work").mkdir()
    (runs / "pytorch" / ".work" / "partial.worker.json").write_text("{")
    out = tmp_path / "out.csv"
    p = subprocess.run([sys.executable, "-m", "bench", "collect", str(runs), "-o", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "broken.json" in p.stderr and "partial" not in p.stderr
    df = pd.read_csv(out)
    assert len(df) == 3
    assert list(df.columns[:8]) == ["stack", "suite", "workload", "task", "size", "variant", "device", "status"]
    ok = df[df.status == "ok"].set_index("stack")
    assert ok.loc["pytorch", "metrics.ms_per_step_mean"] == 1.5
    assert ok.loc["keras3-jax", "env.python"] == "3.11.7"
    assert ok.loc["pytorch", "history.loss"] == "[1.0, 0.5]"
    assert df[df.status == "failed"]["reason"].item() == "boom"
    assert "1.50" in p.stdout and "2.50" in p.stdout and "failed" in p.stdout
    rows = read_rows(out)  # the JSON lines beside the CSV: the same rows, each list a list
    assert jsonl_path(out).exists() and list(rows.columns) == list(df.columns)
    assert rows[rows.status == "ok"].set_index("stack").loc["pytorch", "history.loss"] == [1.0, 0.5]



def test_the_printed_pivot_keeps_each_variant_and_input_apart():
    """Three pytorch mnist_mlp cells (the default, batch 64, a knob's variant) and an ok cell without ms/step: one
    line each, labelled; the ok cell without a value reads n/a. The old pivot keyed (workload, task) alone and
    printed whichever row came first (here the batch-64 cell as the default's 1.00) and "ok" for a missing value."""
    from bench.results.collect import pivot_ms_per_step, to_frame
    from bench.results.record import Record

    recs = []
    for variant, given, ms in (("default", {"batch_size": 64}, 1.0), ("default", {}, 2.0),
                               ("tf32-off", {}, 3.0), ("default", {}, None)):
        c = Cell(stack="pytorch" if ms else "jax", suite="classic", workload="mnist_mlp", task="fit", size="smoke",
                 device="cpu", variant=variant, settings={"tf32": "off"} if variant != "default" else {})
        rec = new_record(c)
        rec.update(status="ok", batch_size=given.get("batch_size", 32), metrics={"ms_per_step_mean": ms})
        if given:
            rec["cell_id"] = f"{c.id}__batch_size=64"
        recs.append(Record.model_validate(rec))
    table = pivot_ms_per_step(to_frame(recs))
    assert table.loc[("mnist_mlp", "fit", "default"), "pytorch"] == "2.00"
    assert table.loc[("mnist_mlp", "fit", "default, batch_size=64"), "pytorch"] == "1.00"
    assert table.loc[("mnist_mlp", "fit", "tf32-off"), "pytorch"] == "3.00"
    assert table.loc[("mnist_mlp", "fit", "default"), "jax"] == "n/a"


def test_a_csv_without_json_lines_still_reads_its_lists(tmp_path):
    """A run collected before the JSON lines (only its CSV) reads as one collected now: its lists parsed, once."""
    runs = tmp_path / "run"
    c, rec = record("pytorch", "mnist_mlp")
    write_json_atomic(runs / "pytorch" / f"{c.id}.json", rec)
    out = tmp_path / "out.csv"
    collect(runs, out)
    with_lines = read_rows(out)
    jsonl_path(out).unlink()
    csv_only = read_rows(out)
    assert csv_only["history.loss"].tolist() == with_lines["history.loss"].tolist() == [[1.0, 0.5]]
    assert csv_only.drop(columns="history.loss").equals(with_lines.drop(columns="history.loss"))


def test_collect_with_nothing_valid_is_an_error(tmp_path):
    (tmp_path / "x.json").write_text("{}")
    p = subprocess.run([sys.executable, "-m", "bench", "collect", str(tmp_path), "-o", str(tmp_path / "o.csv")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "no valid result record" in p.stderr


def test_report_of_the_committed_runs_prints_no_pandas_performance_warning(tmp_path):
    """A wide CSV read back and given more columns by the report's sections warned "DataFrame is highly fragmented"
    (pandas' PerformanceWarning) on every report before the reader consolidated it."""
    root = Path(__file__).resolve().parents[2] / "results"
    for run in ("cpu-smoke", "ledger-cpu"):
        out = subprocess.run([sys.executable, "-W", "always", "-m", "bench", "report", str(root / run), "-o",
                              str(tmp_path / run)], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        assert "PerformanceWarning" not in out.stderr, out.stderr[-2000:]


def test_a_repeated_cell_written_before_the_repeats_times_gets_them_from_its_repeats_records(tmp_path):
    """A cell record of 3 repeats without repeats.started_utc / finished_utc (written before them): the collector
    lists each repeat's times from the repeats' records beside it; without all of them, it leaves them out."""
    runs = tmp_path / "run"
    c, rec = record("pytorch", "mnist_mlp")
    rec.update(started_utc="2026-01-01T10:00:00+00:00", finished_utc="2026-01-01T10:01:00+00:00",
               repeats={"n": 3, "process_wall_s": [60.0, 60.0, 60.0]})
    write_json_atomic(runs / "pytorch" / f"{c.id}.json", rec)
    for k in (1, 2, 3):
        write_json_atomic(runs / "pytorch" / "repeats" / f"{c.id}__r{k}.json",
                          {**rec, "repeats": None, "repeat": k, "started_utc": f"2026-01-01T1{k - 1}:00:00+00:00",
                           "finished_utc": f"2026-01-01T1{k - 1}:01:00+00:00"})
    rows = collect(runs, tmp_path / "out.csv")[0]
    assert rows["repeats.started_utc"].item() == [f"2026-01-01T1{k}:00:00+00:00" for k in (0, 1, 2)]
    assert rows["repeats.finished_utc"].item() == [f"2026-01-01T1{k}:01:00+00:00" for k in (0, 1, 2)]
    (runs / "pytorch" / "repeats" / f"{c.id}__r3.json").unlink()
    assert "repeats.started_utc" not in collect(runs, tmp_path / "out.csv")[0].columns


def test_an_older_records_requested_knobs_are_not_collected_as_settings_in_effect(tmp_path):
    """Records written before new_record left ``settings`` empty held a not-ok cell's requested knobs there: the
    collector drops them (they stay in ``settings_requested``), keeps the runner's ``compile_cache``, and keeps an
    engine's block of a not-ok cell (repeats on two GPUs) as it is."""
    from bench.results.record import load_record, without_requested_settings

    c, rec = record("pytorch", "mnist_cnn", status="timeout")
    rec.update(settings={"compile": True, "compile_cache": "fresh per cell"}, settings_requested={"compile": True})
    write_json_atomic(tmp_path / "run" / f"{c.id}.json", rec)
    rows = collect(tmp_path / "run", tmp_path / "out.csv")[0].iloc[0]
    assert "settings.compile" not in rows.index or pd.isna(rows["settings.compile"])
    assert rows["settings.compile_cache"] == "fresh per cell" and rows["settings_requested.compile"]
    engine = {**rec, "status": "failed", "settings": {"compile": True, "precision": "float32"}}
    write_json_atomic(tmp_path / "engine.json", engine)
    kept = without_requested_settings(load_record(tmp_path / "engine.json"))
    assert kept.settings.model_dump(exclude_unset=True) == {"compile": True, "precision": "float32"}

"""The results history (bench.results.history): collect appends a run, re-collecting replaces it, the report's
trend plots, the BMF export against Bencher's published schema, older layouts, bad input."""

import json
import sqlite3
import subprocess
import sys

import jsonschema
import pandas as pd
import pytest

from bench.core.atomic import write_json_atomic
from bench.results import history
from bench.results.cell import Cell
from bench.results.record import new_record
from tests.helpers.tables import rows_starting

#: Bencher Metric Format's JSON Schema as published: https://bencher.dev/bmf.json, the file
#: bencherdev/bencher services/console/public/v0/bmf.json@55eb0883955402b7198ecd915f09c8fa2702a53c (the same
#: schema is printed on bencher.dev/docs/reference/bencher-metric-format).
BMF_SCHEMA = {
    "$id": "https://bencher.dev/v0/bmf.json",
    "$schema": "http://json-schema.org/draft-07/schema",
    "type": "object",
    "patternProperties": {".+": {
        "type": "object",
        "patternProperties": {".+": {
            "type": "object",
            "properties": {"value": {"type": "number"}, "lower_value": {"type": "number"},
                           "upper_value": {"type": "number"}},
            "required": ["value"]}}}},
}

STACKS = {"keras3-jax": ("jax", "0.10.2"), "pytorch": ("torch", "2.13.0")}
WORKLOADS = ("mnist_mlp", "mnist_cnn")


def record(stack, workload, day, keras, ms, repeats=()):
    """An ok classic record of ``stack`` measured on 2026-11-<day> with Keras ``keras`` (Keras stacks)."""
    c = Cell(stack=stack, suite="classic", workload=workload, task="fit", size="smoke", device="cpu")
    rec = new_record(c)
    backend, version = STACKS[stack]
    rec.update(status="ok", batch_size=32, started_utc=f"2026-11-{day:02d}T10:00:00+00:00")
    rec["metrics"] = {"ms_per_step_mean": ms, "ms_per_step_p50": ms, "samples_per_s": 32_000 / ms}
    rec["env"] = {"cpu_model": "Test CPU", "gpu": {"available": False},
                  "packages": {backend: version, "numpy": "2.4.6", **({"keras": keras} if keras else {})}}
    if stack.startswith("keras"):
        rec["settings"] = {"keras_version": keras, "keras_backend": backend}
    if repeats:
        rec["repeats"] = {"n": len(repeats), "ms_per_step_mean": {
            "values": list(repeats), "median": ms, "min": min(repeats), "max": max(repeats), "cv": 0.01}}
    return c, rec


def write_run(root, day, keras, scale=1.0):
    """Records of every (stack, workload) under ``root``; ms/step = scale x a fixed value per cell."""
    for stack in STACKS:
        for i, wl in enumerate(WORKLOADS):
            ms = scale * (2.0 + i)
            c, rec = record(stack, wl, day, keras, ms, repeats=(ms * 0.98, ms, ms * 1.03))
            write_json_atomic(root / stack / f"{c.id}.json", rec)


def bench(*args):
    return subprocess.run([sys.executable, "-m", "bench", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def two_runs(tmp_path):
    """Two runs collected by `bench collect` into tmp_path/results (history.sqlite beside the CSVs)."""
    out = tmp_path / "results"
    write_run(tmp_path / "runs" / "r1", 20, "3.14.0")
    write_run(tmp_path / "runs" / "r2", 22, "3.15.1", scale=1.5)
    for run in ("r1", "r2"):
        p = bench("collect", tmp_path / "runs" / run, "-o", out / f"{run}.csv")
        assert p.returncode == 0, p.stderr
        assert f"run {run}, 4 rows" in p.stdout
    return out


def test_two_collects_give_two_runs_and_recollecting_replaces_one(two_runs, tmp_path):
    path = two_runs / "history.sqlite"
    with sqlite3.connect(path) as conn:  # pandas reads the store without bench's help
        cells = pd.read_sql("SELECT * FROM cells", conn)
    assert sorted(cells["run"].unique()) == ["r1", "r2"] and len(cells) == 8
    write_run(tmp_path / "runs" / "r1", 20, "3.14.0", scale=3.0)  # r1 measured again, collected again
    assert bench("collect", tmp_path / "runs" / "r1", "-o", two_runs / "r1.csv").returncode == 0
    cells = history.load(path)
    assert len(cells) == 8 and cells.groupby("run").size().to_dict() == {"r1": 4, "r2": 4}
    r1 = cells[(cells["run"] == "r1") & (cells["stack"] == "pytorch") & (cells["workload"] == "mnist_mlp")]
    assert r1["ms_per_step_mean"].item() == 6.0
    runs = history.runs(path)
    assert list(runs["run"]) == ["r1", "r2"] and list(runs["cells"]) == [4, 4] and list(runs["ok"]) == [4, 4]


def test_key_columns_come_from_the_rows(two_runs):
    cells = history.load(two_runs / "history.sqlite").set_index(["run", "stack", "workload"])
    jax = cells.loc[("r2", "keras3-jax", "mnist_mlp")]
    assert jax["versions"] == "keras 3.15.1, jax 0.10.2"
    assert cells.loc[("r1", "keras3-jax", "mnist_mlp"), "versions"] == "keras 3.14.0, jax 0.10.2"
    assert cells.loc[("r1", "pytorch", "mnist_mlp"), "versions"] == "torch 2.13.0"
    assert jax["cell"] == "classic__mnist_mlp__fit__smoke__default" and jax["machine"] == "CPU: Test CPU"
    assert jax["date"] == "2026-11-22" and jax["device"] == "cpu" and jax["batch_size"] == 32
    assert json.loads(jax["packages"]) == {"jax": "0.10.2", "keras": "3.15.1", "numpy": "2.4.6"}
    assert jax["ms_per_step_mean"] == 3.0 and jax["repeats_n"] == 3
    assert jax["ms_per_step_repeats_min"] == pytest.approx(3.0 * 0.98)
    assert jax["ms_per_step_repeats_max"] == pytest.approx(3.0 * 1.03)


def test_version_label_reads_the_engine_keras_and_pins():
    keras2 = {"settings.keras_version": "2.21.0", "settings.keras_backend": "tensorflow",
              "env.packages.keras": "3.15.1", "env.packages.tf-keras": "2.21.0", "env.packages.tensorflow": "2.21.0",
              "env.packages.jax": float("nan")}
    assert history.version_label(keras2) == "keras 2.21.0, tensorflow 2.21.0"
    pinned = {"env.packages.jax": "0.9.2", "env.pins.jax": "0.9.2", "env.pins.optax": "0.2.7"}
    assert history.version_label(pinned) == "jax 0.9.2, optax 0.2.7"
    assert history.version_label({}) == ""


def test_a_plain_jax_row_is_labelled_by_its_backend_and_its_model_libraries():
    """The jax image holds TensorFlow for tf.data only: the label names JAX, Flax and optax, not TensorFlow."""
    row = {"stack": "jax", "env.packages.tensorflow": "2.21.0", "env.packages.jax": "0.10.2",
           "settings.flax_version": "0.12.8", "settings.optax_version": "0.2.8"}
    assert history.version_label(row) == "jax 0.10.2, flax 0.12.8, optax 0.2.8"


def test_report_draws_a_trend_per_cell_with_two_points_per_stack(two_runs, tmp_path):
    from bench.results.report.history import trend_groups, trend_plot

    p = bench("report", two_runs, "-o", two_runs)
    assert p.returncode == 0, p.stderr
    report = (two_runs / "report.md").read_text()
    assert "## History" in report and rows_starting(report, "r1") == [["r1", "2026-11-20T10:00:00+00:00", "4", "4"]]
    for wl in WORKLOADS:
        name = f"trend_classic-{wl.replace('_', '-')}-fit-smoke-default__cpu-test-cpu.png"
        assert (two_runs / "plots" / "history" / name).stat().st_size > 0
        assert f"(plots/history/{name})" in report
    groups = trend_groups(history.load(two_runs / "history.sqlite"))
    assert [(c, m) for c, m, _ in groups] == [(f"classic__{wl}__fit__smoke__default", "CPU: Test CPU")
                                              for wl in sorted(WORKLOADS)]
    for cell, machine, rows in groups:
        assert rows.groupby("stack")["run"].apply(list).to_dict() == {"keras3-jax": ["r1", "r2"],
                                                                      "pytorch": ["r1", "r2"]}
        assert trend_plot(cell, machine, rows, tmp_path / "t.png") == 4


def test_no_trend_joins_rows_whose_records_name_no_machine_model():
    """machine_label says "unknown GPU" (or "CPU: unknown") of a record without the model: two runs of it were drawn
    as one trend "on unknown GPU", which may be two GPU models. Only named models are trended."""
    import pandas as pd

    from bench.results.report.history import trend_groups

    rows = [{"cell": "c", "stack": "pytorch", "status": "ok", "ms_per_step_mean": ms, "run": run,
             "started_utc": f"2026-11-{day}T10:00:00+00:00",
             "machine": history.machine_label({"device": "gpu", "env.gpu.name": name})}
            for run, day, ms, name in (("r1", 20, 2.0, None), ("r2", 21, 3.0, None),
                                       ("r1", 20, 2.0, "NVIDIA H100"), ("r2", 21, 2.1, "NVIDIA H100"))]
    groups = trend_groups(pd.DataFrame(rows))
    assert [(c, m, list(r["run"])) for c, m, r in groups] == [("c", "NVIDIA H100", ["r1", "r2"])]


def test_no_trend_with_one_run(tmp_path):
    write_run(tmp_path / "runs" / "r1", 20, "3.14.0")
    assert bench("collect", tmp_path / "runs" / "r1", "-o", tmp_path / "r1.csv").returncode == 0
    assert bench("report", tmp_path).returncode == 0
    assert "no trend plot" in (tmp_path / "report.md").read_text()
    assert not (tmp_path / "plots" / "history").exists()


def test_bmf_export_validates_against_bencher_schema(two_runs, tmp_path):
    out = tmp_path / "bmf.json"
    p = bench("history", "export-bmf", "--history", two_runs / "history.sqlite", "-o", out)
    assert p.returncode == 0, p.stderr
    assert "run r2, 4 benchmarks" in p.stdout  # the latest run by default
    bmf = json.loads(out.read_text())
    jsonschema.validate(bmf, BMF_SCHEMA)
    m = bmf["pytorch__classic__mnist_cnn__fit__smoke__default"]
    # Bencher's latency measure is in ns: 4.5 ms/step = 4.5e6 ns; bounds: the repeats' min and max
    assert m["latency"] == pytest.approx({"value": 4.5e6, "lower_value": 4.5e6 * 0.98, "upper_value": 4.5e6 * 1.03})
    assert m["throughput"]["value"] == pytest.approx(32_000 / 4.5)
    p = bench("history", "export-bmf", "--history", two_runs / "history.sqlite", "--run", "r1", "-o", out)
    assert p.returncode == 0
    assert json.loads(out.read_text())["pytorch__classic__mnist_cnn__fit__smoke__default"]["latency"]["value"] \
        == pytest.approx(3.0e6)


def test_bmf_rejects_clashing_names(two_runs):
    with pytest.raises(history.HistoryError, match="appears twice"):
        history.to_bmf(history.load(two_runs / "history.sqlite"))


def test_a_failed_append_leaves_the_run_as_it_was(two_runs, monkeypatch):
    path = two_runs / "history.sqlite"
    before = history.load(path)
    good = history.rows_of(pd.read_csv(two_runs / "r1.csv"), "r1")
    monkeypatch.setattr(history, "rows_of", lambda df, run: [good[0], good[1][:3]])  # the second row is broken
    with pytest.raises(sqlite3.Error):
        history.append_run(path, "r1", pd.read_csv(two_runs / "r1.csv"))
    pd.testing.assert_frame_equal(history.load(path), before)


def old_layout(path):
    """A history of layout 1 as its first version wrote it, without versions, cell, machine, mfu...: columns added
    later. One run ``old``, one row."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        conn.execute("INSERT INTO meta VALUES ('history_schema', '1')")
        conn.execute("CREATE TABLE runs (run TEXT PRIMARY KEY, collected_utc TEXT, started_utc TEXT, cells INTEGER, "
                     "ok INTEGER, source TEXT)")
        conn.execute("CREATE TABLE cells (run TEXT, cell_id TEXT, stack TEXT, status TEXT, ms_per_step_mean REAL)")
        conn.execute("INSERT INTO runs VALUES ('old', '2026-01-01', '2026-01-01', 1, 1, '')")
        conn.execute("INSERT INTO cells VALUES ('old', 'pytorch__x', 'pytorch', 'ok', 5.0)")


def test_an_older_layout_loads_and_a_newer_one_is_refused(tmp_path):
    path = tmp_path / "old.sqlite"
    old_layout(path)
    cells = history.load(path)
    assert cells["ms_per_step_mean"].tolist() == [5.0] and cells["versions"].isna().all() and "mfu" in cells
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'history_schema'", (str(history.HISTORY_SCHEMA + 1),))
    p = bench("history", "runs", "--history", path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "reads layouts 1.." in p.stderr


@pytest.mark.parametrize("args, message", [
    (("runs",), "no history at"),
    (("show", "--run", "r9"), "no run 'r9'"),
    (("show", "--stack", "nope"), "no stack nope"),
    (("export-bmf", "--run", "r9", "-o", "x.json"), "no run 'r9'"),
])
def test_bad_input_is_one_line(two_runs, tmp_path, args, message):
    hist = two_runs / "history.sqlite" if args != ("runs",) else tmp_path / "absent.sqlite"
    p = bench("history", *args, "--history", hist)
    assert p.returncode == 2 and message in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_not_a_history_is_one_line(tmp_path):
    (tmp_path / "h.sqlite").write_text("not a database at all, just some text " * 10)
    p = bench("history", "runs", "--history", tmp_path / "h.sqlite")
    assert p.returncode == 2 and "is not a bench history" in p.stderr and p.stderr.count("\n") == 1
    with sqlite3.connect(tmp_path / "other.sqlite") as conn:
        conn.execute("CREATE TABLE t (x)")
    p = bench("history", "show", "--history", tmp_path / "other.sqlite")
    assert p.returncode == 2 and "expected meta, runs, cells" in p.stderr


def test_show_exports_csv_and_no_history_skips(two_runs, tmp_path):
    out = tmp_path / "sel.csv"
    p = bench("history", "show", "--history", two_runs / "history.sqlite", "--stack", "pytorch", "-o", out)
    assert p.returncode == 0 and "4 rows" in p.stdout
    assert set(pd.read_csv(out)["stack"]) == {"pytorch"}
    write_run(tmp_path / "runs" / "r3", 23, "3.15.1")
    assert bench("collect", tmp_path / "runs" / "r3", "-o", tmp_path / "x" / "r3.csv", "--no-history").returncode == 0
    assert not (tmp_path / "x" / "history.sqlite").exists()


def test_a_history_sqlite_cannot_write_is_one_line_and_the_csv_is_written(tmp_path):
    """A results folder on a bucket's FUSE mount (goofys on S3: no random writes) makes SQLite fail with
    sqlite3.OperationalError; here a history path SQLite cannot open (a folder) does the same. One line, not a
    traceback, and the CSV is there."""
    write_run(tmp_path / "runs" / "r1", 20, "3.15.1")
    (tmp_path / "bucket" / "history.sqlite").mkdir(parents=True)
    out = tmp_path / "bucket" / "r1.csv"
    p = bench("collect", tmp_path / "runs" / "r1", "-o", out)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert "cannot write the history" in p.stderr and "OperationalError" in p.stderr and "--no-history" in p.stderr
    assert len(pd.read_csv(out)) == 4


@pytest.mark.parametrize("setting, flag", [((), False), (("HISTORY=on",), False), (("HISTORY=off",), True)])
def test_make_collect_skips_the_history_with_history_off(setting, flag):
    """cloud/run.sh collects into the bucket with HISTORY=off (make bench-all passes it to make collect)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    p = subprocess.run(["make", "-n", "--no-print-directory", "collect", f"PYTHON={sys.executable}", "DEVICE=cpu",
                        *setting], cwd=root, capture_output=True, text=True, timeout=60)
    line = next(x for x in p.stdout.splitlines() if "bench collect" in x)
    assert ("--no-history" in line) is flag, p.stdout


def frame(*rows):
    """History rows (``load``'s columns that trends and BMF read) of pytorch's cell ``c``: (run, day, machine, ms,
    repeats min, max, n)."""
    return pd.DataFrame([{"run": run, "cell_id": "pytorch__c", "cell": "c", "stack": "pytorch", "status": "ok",
                          "machine": machine, "ms_per_step_mean": ms, "started_utc": f"2026-11-{day}T10:00:00+00:00",
                          "date": f"2026-11-{day}", "versions": "torch 2.13.0", "gpu_uuid": f"GPU-{i}",
                          "ms_per_step_repeats_min": lo, "ms_per_step_repeats_max": hi, "repeats_n": n,
                          "samples_per_s": 1000 / ms}
                         for i, (run, day, machine, ms, lo, hi, n) in enumerate(rows)])


def test_bmf_leaves_out_rows_of_an_unknown_machine_as_the_trends_do(tmp_path):
    """Rows whose record names no model were exported as one machine (``... @ unknown GPU``, or the only benchmark
    names when no row named one): a Bencher testbed is one machine, and they may be several."""
    cells = frame(("r", 20, "NVIDIA H100", 2.0, None, None, 1), ("r", 20, "unknown GPU", 3.0, None, None, 1))
    assert list(history.to_bmf(cells)) == ["pytorch__c"]
    assert history.to_bmf(cells.assign(machine=[None, "CPU: unknown"])) == {}
    c, rec = record("pytorch", "mnist_mlp", 20, None, 2.0)
    rec["env"].pop("cpu_model")
    write_json_atomic(tmp_path / "runs" / "r" / f"{c.id}.json", rec)
    assert bench("collect", tmp_path / "runs" / "r", "-o", tmp_path / "r.csv").returncode == 0
    p = bench("history", "export-bmf", "--history", tmp_path / "history.sqlite", "-o", tmp_path / "bmf.json")
    assert p.returncode == 0 and "run r, 0 benchmarks" in p.stdout, p.stderr
    assert "1 ok row(s) left out: no GPU or CPU model recorded for them" in p.stdout
    assert json.loads((tmp_path / "bmf.json").read_text()) == {}


def test_the_rows_a_trend_or_an_export_can_show_are_read_in_one_place():
    """``measured_rows`` is the one reading of the rows a trend point or a BMF benchmark stands for before the
    machine rule (the export's count of rows left out re-read it, as ``trend_groups`` once did): ok, with ms/step;
    ``point_rows`` keeps those of a known machine model."""
    cells = frame(("r", 20, "NVIDIA H100", 2.0, None, None, 1), ("r", 20, "unknown GPU", 3.0, None, None, 1),
                  ("r", 20, "NVIDIA H100", 4.0, None, None, 1), ("r", 20, "NVIDIA H100", 5.0, None, None, 1))
    cells.loc[2, "status"], cells.loc[3, "ms_per_step_mean"] = "failed", float("nan")
    assert list(history.measured_rows(cells)["ms_per_step_mean"]) == [2.0, 3.0]
    assert list(history.point_rows(cells)["ms_per_step_mean"]) == [2.0]


def test_two_gpus_of_one_model_in_one_run_give_one_point_their_median(tmp_path):
    """Two rows of one cell on two H100s of one run were two points at one x of the trend (a vertical segment), and
    the BMF export of that one run said "appears twice (export one run: --run)". A run is one point per stack and
    machine model: the rows' median, bars over all their repeats, labelled with the count of rows."""
    from bench.results.report.history import trend_groups, trend_plot

    cells = frame(("r1", 20, "NVIDIA H100", 2.0, 1.9, 2.1, 3), ("r1", 20, "NVIDIA H100", 2.4, None, None, 1),
                  ("r2", 21, "NVIDIA H100", 2.2, 2.1, 2.3, 3))
    ((cell, machine, rows),) = trend_groups(cells)
    assert list(rows["run"]) == ["r1", "r2"] and list(rows["rows"]) == [2, 1]
    r1 = rows.iloc[0]
    assert (r1["ms_per_step_mean"], r1["ms_per_step_repeats_min"], r1["ms_per_step_repeats_max"]) == (
        pytest.approx(2.2), 1.9, 2.4)
    assert r1["repeats_n"] == 4 and pd.isna(r1["gpu_uuid"]) and r1["versions"] == "torch 2.13.0"
    assert trend_plot(cell, machine, rows, tmp_path / "t.png") == 2
    bmf = history.to_bmf(cells[cells["run"] == "r1"])
    assert bmf["pytorch__c"]["latency"] == pytest.approx({"value": 2.2e6, "lower_value": 1.9e6, "upper_value": 2.4e6})
    assert bmf["pytorch__c"]["throughput"]["value"] == pytest.approx((1000 / 2.0 + 1000 / 2.4) / 2)


def test_show_on_a_history_whose_rows_name_no_cell_is_one_line(tmp_path):
    """An older layout's rows have no ``cell`` (NULL): ``show --cell`` of an absent one listed what the history has
    with sorted(), which refused None: a TypeError traceback."""
    path = tmp_path / "old.sqlite"
    old_layout(path)
    p = bench("history", "show", "--cell", "nope", "--history", path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no cell nope in the history (it has: none)" in p.stderr

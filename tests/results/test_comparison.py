"""The comparison statistics (``bench.results.compare.ratio_stats``) and the report's Versions and Keras-overhead
sections, on synthetic records and CSV rows."""


import numpy as np
import pandas as pd
import pytest
from scipy.stats import mannwhitneyu

from bench.core.atomic import write_json_atomic
from bench.core.stacks import STACKS, Stack
from bench.results import compare as cmp
from bench.results.cell import Cell
from bench.results.collect import collect
from bench.results.compare import bootstrap_ci, mann_whitney_p, ratio_stats
from bench.results.record import new_record, result_path
from bench.results.report import load_runs, versions, write_report
from tests.helpers.tables import rows_starting, table_rows

DERIVED = "keras3-jax--keras-3.14.0"
BASE_MS = [10.0, 10.3, 9.8, 10.1, 10.2]
FAST_MS = [8.1, 7.9, 8.3, 8.0, 8.2]  # 20 % faster, no overlap
SAME_MS = [10.05, 9.85, 10.25, 10.15, 10.02]  # interleaved with BASE_MS


def numpy_bootstrap(a, b, n=40000, seed=123, level=0.95):
    """An independent percentile bootstrap of median(b) / median(a): plain numpy, its own seed and resamples."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(a), np.asarray(b)
    ma = np.median(a[rng.integers(0, len(a), (n, len(a)))], axis=1)
    mb = np.median(b[rng.integers(0, len(b), (n, len(b)))], axis=1)
    tail = (1 - level) / 2 * 100
    return np.percentile(mb / ma, [tail, 100 - tail])


# ---- the statistic ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("a, b", [(BASE_MS, [11.9, 12.3, 12.0, 12.4, 11.7]),
                                  ([10.0, 10.3, 9.8, 10.1, 10.2, 9.9, 10.05, 10.4],
                                   [10.1, 10.2, 9.9, 10.3, 10.0, 10.6, 10.2, 9.95])])
def test_the_interval_equals_a_plain_numpy_bootstrap(a, b):
    low, high = bootstrap_ci(a, b)
    ref = numpy_bootstrap(a, b)
    assert low == pytest.approx(ref[0], rel=5e-3) and high == pytest.approx(ref[1], rel=5e-3)
    assert bootstrap_ci(a, b) == (low, high)  # seeded: the same report twice


def test_p_is_scipys_exact_mann_whitney_and_ties_go_to_a_permutation_test():
    p, how = mann_whitney_p(BASE_MS, SAME_MS)
    assert how == "exact"
    assert p == mannwhitneyu(BASE_MS, SAME_MS, alternative="two-sided", method="exact").pvalue
    # 5 vs 5 completely separated: the smallest exact two-sided p, 2 / C(10, 5)
    assert mann_whitney_p(BASE_MS, FAST_MS)[0] == pytest.approx(2 / 252)
    p, how = mann_whitney_p([1.0, 2.0, 3.0, 3.0], [3.0, 6.0, 7.0, 8.0])
    assert how == "permutation"  # 70 partitions: enumerated, so exact: 6 of 70 as extreme as U = 1
    assert p == pytest.approx(6 / 70)


def test_verdicts_on_constructed_data():
    fast = ratio_stats(BASE_MS, FAST_MS)
    assert fast.verdict == "lower" and fast.time_verdict == "faster"
    assert fast.ratio == pytest.approx(8.1 / 10.1) and fast.ci_high < 1
    assert ratio_stats(FAST_MS, BASE_MS).time_verdict == "slower"
    same = ratio_stats(BASE_MS, list(BASE_MS))
    assert same.time_verdict == "no detectable change" and same.ratio == 1.0 and same.ci_low <= 1 <= same.ci_high
    assert ratio_stats(BASE_MS, SAME_MS).time_verdict == "no detectable change"
    one = ratio_stats([10.0], [8.0])
    assert one.time_verdict == "too few repeats" and one.ratio == 0.8 and one.ci_low is None and one.p_value is None
    # 3 vs 3, fully separated: p = 0.1 at best, so no verdict however clear it looks
    assert ratio_stats(BASE_MS[:3], FAST_MS[:3]).time_verdict == "too few repeats"
    # significant but under the threshold: 1 % faster is no change
    tiny = ratio_stats([100.0, 100.1, 100.2, 100.3, 100.4], [99.0, 99.1, 99.2, 99.3, 99.4])
    assert tiny.p_value < 0.05 and tiny.ci_high < 1 and tiny.time_verdict == "no detectable change"
    assert ratio_stats([], [1.0]).verdict == "n/a" and ratio_stats([0.0, 0.0], [1.0, 2.0]).verdict == "n/a"


@pytest.mark.parametrize("a, b", [([10.0, float("nan"), 10.1, 10.2, 10.3], FAST_MS),
                                  ([10.0, float("inf"), 10.1, 10.2, 10.3], FAST_MS),
                                  (BASE_MS, [0.0, 0.0, 0.0, 8.0, 8.1]),
                                  ([-x for x in BASE_MS], FAST_MS)])
def test_a_value_that_is_no_time_gives_no_ratio_and_no_verdict(a, b):
    """A NaN repeat made the ratio, interval and p NaN and read "no detectable change"; an infinite, zero or negative
    one gave "faster". A time is positive and finite: otherwise no ratio, n/a, with the reason."""
    s = ratio_stats(a, b)
    assert (s.ratio, s.ci_low, s.p_value, s.verdict, s.time_verdict) == (None, None, None, "n/a", "n/a")
    assert "not a positive finite number" in s.reason


def test_the_interval_covers_the_true_ratio():
    """200 synthetic 5-vs-5 runs whose population medians differ by exactly 1.2: the interval holds 1.2 in at
    least 85 % of them (nominal 95 %; seeded, so the count is fixed) and every run says slower."""
    rng = np.random.default_rng(7)
    hits, verdicts = 0, set()
    for _ in range(200):
        a, b = 10 * np.exp(rng.normal(0, 0.02, 5)), 12 * np.exp(rng.normal(0, 0.02, 5))
        s = ratio_stats(list(a), list(b))
        hits += s.ci_low <= 1.2 <= s.ci_high
        verdicts.add(s.time_verdict)
    assert hits >= 170 and verdicts == {"slower"}


def test_bench_compare_uses_the_same_statistic():
    a = pd.DataFrame([{"stack": "pytorch", "suite": "tuning", "workload": "w", "task": "fit", "size": "full",
                       "variant": "x", "device": "gpu", "status": "ok", "metrics.ms_per_step_mean": 10.1,
                       "repeats.ms_per_step_mean.values": BASE_MS}])
    b = a.assign(**{"metrics.ms_per_step_mean": 8.1, "repeats.ms_per_step_mean.values": [FAST_MS]})
    row = cmp.compare(a, b).iloc[0]
    s = ratio_stats(BASE_MS, FAST_MS)
    assert (row["ci_low"], row["ci_high"], row["p_value"], row["verdict"]) == (s.ci_low, s.ci_high, s.p_value,
                                                                               s.verdict)


def test_compare_pairs_a_variant_with_another_within_one_csv(tmp_path):
    """A knob's effect: the default cells against the variant's, from one CSV, matched on everything but the
    variant; the statistic is the same; a variant absent from a side is a clear error."""
    row = {"stack": "keras3-jax", "suite": "classic", "workload": "w", "task": "fit", "size": "smoke",
           "device": "cpu", "status": "ok"}
    both = pd.DataFrame([
        {**row, "variant": "default", "metrics.ms_per_step_mean": 10.1,
         "repeats.ms_per_step_mean.values": BASE_MS},
        {**row, "variant": "row_lstm-reshape", "metrics.ms_per_step_mean": 8.1,
         "repeats.ms_per_step_mean.values": FAST_MS},
        {**row, "stack": "keras3-tf", "variant": "default", "metrics.ms_per_step_mean": 5.0},
    ])
    table = cmp.compare(both, both, variants=("default", "row_lstm-reshape"))
    assert len(table) == 1  # keras3-tf has no variant row: unmatched
    r = table.iloc[0]
    s = ratio_stats(BASE_MS, FAST_MS)
    assert r["stack"] == "keras3-jax" and r["variant"] == "default -> row_lstm-reshape"
    assert (r["ratio"], r["p_value"], r["verdict"]) == (s.ratio, s.p_value, s.verdict)
    with pytest.raises(ValueError, match="no row of variant 'verbose-0'.*default, row_lstm-reshape"):
        cmp.compare(both, both, variants=("default", "verbose-0"))
    path = tmp_path / "run.csv"
    both.to_csv(path, index=False)
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-m", "bench", "compare", str(path), str(path), "--variant-a", "default"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "go together" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "bench", "compare", str(path), str(path), "--variant-a", "default",
                        "--variant-b", "row_lstm-reshape"], capture_output=True, text=True)
    assert p.returncode == 0 and "default -> row_lstm-reshape" in p.stdout, p.stderr


def test_compare_names_the_cells_it_leaves_out(tmp_path):
    """A cell ok in A that failed in B was dropped without a word: "1 cells compared; 0 changed beyond noise" of a
    run where the other cell broke. The cells left out are listed with both statuses and the reason."""
    row = {"stack": "pytorch", "suite": "classic", "task": "fit", "size": "smoke", "variant": "default",
           "device": "cpu", "status": "ok", "metrics.ms_per_step_mean": 10.1,
           "repeats.ms_per_step_mean.values": BASE_MS}
    a = pd.DataFrame([{**row, "workload": "w1"}, {**row, "workload": "w2"}])
    b = pd.DataFrame([{**row, "workload": "w1"},
                      {**row, "workload": "w2", "status": "failed", "reason": "CUDA out of memory",
                       "metrics.ms_per_step_mean": None, "repeats.ms_per_step_mean.values": None},
                      {**row, "workload": "w3"}])
    left = cmp.not_compared(a, b)
    assert [(r["workload"], r["status_a"], r["status_b"], r["reason"]) for r in left.to_dict("records")] == [
        ("w2", "ok", "failed", "CUDA out of memory"), ("w3", "absent", "ok", "")]
    assert cmp.not_compared(a, a).empty
    # an ok row beside a failed one on each side is compared (compare takes the ok one): not listed as left out too
    twice = pd.concat([a, a.assign(status="failed")])
    assert cmp.not_compared(twice, a).empty
    for name, df in (("a", a), ("b", b)):
        df.to_json(tmp_path / f"{name}.jsonl", orient="records", lines=True)
        df.to_csv(tmp_path / f"{name}.csv", index=False)
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-m", "bench", "compare", str(tmp_path / "a.csv"), str(tmp_path / "b.csv")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "1 cells compared" in p.stdout and "2 cells not compared" in p.stdout
    assert "CUDA out of memory" in p.stdout and "0 n/a" in p.stdout
    # every cell failed in B: the one-line error, and before it the cells with their statuses and reasons (before,
    # the error alone: "no ok cell appears in both CSVs")
    b.assign(status="failed", reason="CUDA out of memory").to_csv(tmp_path / "b.csv", index=False)
    p = subprocess.run([sys.executable, "-m", "bench", "compare", str(tmp_path / "a.csv"), str(tmp_path / "b.csv")],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "no ok cell appears in both CSVs" in p.stderr and "Traceback" not in p.stderr
    assert "3 cells not compared" in p.stdout and p.stdout.count("CUDA out of memory") == 3


def test_compare_says_what_differs_in_effect_between_rows_matched_by_name():
    """Rows are matched by requested names (variant, inputs): two runs on different CPU models, or a variant whose
    jit_compile Keras resolved otherwise, were compared without a word. ``differs`` names the machine and each setting
    in effect both rows record, the framework versions in effect among them (two runs of one stack name with
    another Keras: the ratio holds that); unrecorded ones are not differences."""
    row = {"stack": "keras3-tf", "suite": "tuning", "workload": "w", "task": "fit", "size": "full", "variant": "x",
           "device": "cpu", "status": "ok", "metrics.ms_per_step_mean": 10.1,
           "repeats.ms_per_step_mean.values": BASE_MS, "env.cpu_model": "AMD EPYC", "settings.jit_compile": True,
           "settings.precision": "float32",
           "settings.keras_version": "3.14.1", "settings.steps_per_execution": 1.0}
    a = pd.DataFrame([row])
    b = pd.DataFrame([{**row, "env.cpu_model": "Intel Xeon", "settings.jit_compile": False,
                       "settings.keras_version": "3.15.1", "settings.precision": None,
                       "settings.steps_per_execution": 1}])
    assert cmp.compare(a, b).iloc[0]["differs"] == ("machine: CPU: AMD EPYC -> CPU: Intel Xeon; "
                                                    "settings.jit_compile: True -> False; "
                                                    "settings.keras_version: 3.14.1 -> 3.15.1")
    assert cmp.compare(a, a).iloc[0]["differs"] == ""


def test_differs_names_the_gpu_model_and_driver_of_gpu_rows():
    """The rows are indexed by the key (device among it): ``machine_label`` saw no device and labelled every GPU row
    by its CPU, so an A100 run against an H100 run on one CPU model said nothing differed."""
    row = {"stack": "pytorch", "suite": "classic", "workload": "w", "task": "fit", "size": "full",
           "variant": "default", "device": "gpu", "status": "ok", "metrics.ms_per_step_mean": 10.1,
           "repeats.ms_per_step_mean.values": BASE_MS, "env.cpu_model": "AMD EPYC", "env.gpu.name": "NVIDIA A100",
           "env.gpu.driver": "570.86", "settings.tf32_matmul": True}
    b = {**row, "env.gpu.name": "NVIDIA H100 80GB HBM3", "env.gpu.driver": "580.65"}
    assert cmp.compare(pd.DataFrame([row]), pd.DataFrame([b])).iloc[0]["differs"] == (
        "machine: NVIDIA A100 -> NVIDIA H100 80GB HBM3; env.gpu.driver: 570.86 -> 580.65")


def test_differs_leaves_out_what_is_no_difference():
    """A float32 read-back (0.001 as 0.0010000000474974513), a TF32 switch on a CPU row (no TF32 there), and under
    ``--variant-a/-b`` the knob the two variants differ in by design."""
    row = {"stack": "keras3-jax", "suite": "tuning", "workload": "w", "task": "fit", "size": "smoke",
           "variant": "default", "device": "cpu", "status": "ok", "metrics.ms_per_step_mean": 10.1,
           "repeats.ms_per_step_mean.values": BASE_MS, "settings.learning_rate": 0.001,
           "settings.tf32_matmul": False, "settings.jit_compile": True, "settings.model_config.seq_len": 16}
    b = {**row, "settings.learning_rate": 0.0010000000474974513, "settings.tf32_matmul": True}
    assert cmp.compare(pd.DataFrame([row]), pd.DataFrame([b])).iloc[0]["differs"] == ""
    c = {**row, "settings.model_config.seq_len": 32}  # model_config is the field's JSON key (Python: built_config)
    assert cmp.compare(pd.DataFrame([row]), pd.DataFrame([c])).iloc[0]["differs"] == (
        "settings.model_config.seq_len: 16 -> 32")
    jit_off = {**row, "variant": "jit_compile=false", "settings.jit_compile": False,
               "settings_requested.jit_compile": False}
    both = pd.DataFrame([row, jit_off])
    out = cmp.compare(both, both, variants=("default", "jit_compile=false"))
    assert out.iloc[0]["differs"] == ""


# ---- the report -------------------------------------------------------------------------------------------------

def test_compare_refuses_schema_3s_s_per_epoch_against_schema_4s_and_says_why():
    """fit_s_per_epoch (schema 3: the call over the epochs, or the spans' mean, by code version) is no quantity a
    schema 4 run holds: comparing it, or the 2017 metric against a schema 3 run, is refused with the reason."""
    row = {"stack": "keras3-jax", "suite": "classic", "workload": "w", "task": "fit", "size": "smoke",
           "variant": "default", "device": "cpu", "status": "ok", "metrics.ms_per_step_mean": 1.0}
    old = pd.DataFrame([{**row, "metrics.fit_s_per_epoch": 2.0}])
    new = pd.DataFrame([{**row, "metrics.fit_call_s_per_epoch": 2.5, "metrics.fit_epoch_s_mean": 2.0}])
    with pytest.raises(ValueError, match="CSV B lacks columns: metrics.fit_s_per_epoch .*newer runs hold "
                                         "fit_call_s_per_epoch and fit_epoch_s_mean"):
        cmp.compare(old, new, "fit_s_per_epoch")
    with pytest.raises(ValueError, match="CSV A lacks .*schema 3 or older holds metrics.fit_s_per_epoch instead"):
        cmp.compare(old, new, "fit_call_s_per_epoch")
    assert len(cmp.compare(new, new, "fit_call_s_per_epoch")) == 1


def cell_record(stack, workload, values, peak=None, first_epoch=1.0, order_rule=None):
    c = Cell(stack=stack, suite="classic", workload=workload, task="fit", size="smoke",
             device="gpu" if peak else "cpu")
    rec = new_record(c)
    median = float(np.median(values))
    rec.update(status="ok", batch_size=32)
    rec["metrics"] = {"ms_per_step_mean": median, "first_epoch_s": first_epoch}
    rec["repeats"] = {"n": len(values), "ok": len(values),
                      "ms_per_step_mean": {"values": values, "median": median}}
    rec["memory"] = {"host_peak_rss_bytes": 2**30, "device_peak_bytes": peak}
    rec["schedule"] = {"seed": 1, "round": 1, "rounds": len(values), "order": [stack], "position": 1,
                       **({"order_rule": order_rule} if order_rule else {})}
    return c, rec


@pytest.fixture
def derived(monkeypatch):
    """A version stack as the version-stack writer declares it: keras3-jax with Keras 3.14.0."""
    base = STACKS["keras3-jax"]
    monkeypatch.setitem(STACKS, DERIVED, Stack(DERIVED, "x", "Keras 3.14.0 on JAX", base.family, base.backend,
                                               "Keras 3.14 JAX", base.env, default=False, base="keras3-jax",
                                               pins=("keras==3.14.0",)))


def run_csv(tmp_path, recs, run="versions"):
    for c, r in recs:
        write_json_atomic(result_path(tmp_path / "runs" / run, c), r)
    collect(tmp_path / "runs" / run, tmp_path / "results" / f"{run}.csv")
    return tmp_path / "results" / f"{run}.csv"


def test_versions_and_keras_overhead_sections_render(tmp_path, derived):
    csv = run_csv(tmp_path, [
        cell_record("keras3-jax", "mnist_mlp", BASE_MS, first_epoch=3.0, order_rule="abba"),
        cell_record(DERIVED, "mnist_mlp", FAST_MS, first_epoch=2.5, order_rule="abba"),
        cell_record("keras3-jax", "mnist_cnn", BASE_MS, order_rule="abba"),
        cell_record(DERIVED, "mnist_cnn", SAME_MS, order_rule="abba"),
        cell_record("keras3-jax", "babi_rnn", [10.0], order_rule="abba"),
        cell_record(DERIVED, "babi_rnn", [12.0], order_rule="abba"),
        cell_record("jax", "mnist_mlp", FAST_MS, order_rule="abba"),
        cell_record("keras3-torch", "mnist_mlp", BASE_MS, order_rule="abba"),  # no pytorch: no such pair
    ])
    runs, _ = load_runs([csv])
    text = write_report(runs, tmp_path / "out").read_text()
    lines = text.splitlines()
    assert "## Versions" in lines and f"### {DERIVED} vs keras3-jax" in lines
    # the records hold no pins: the line says whose they are (it said "Pins that differ: `keras==3.14.0`" alone)
    pins = "- Pins that differ: `keras==3.14.0` (as the stack list declares them: the records hold none)"
    assert pins in lines
    order = lines[lines.index(pins) + 1]  # the Method section has its own
    assert order == ("- Order: 1, 5 round(s), every stack once per round in the abba order (two stacks: AB, BA, BA, "
                     "AB, ...; no seed) (`schedule.*` in each row)")
    assert cmp.rule_text() in text
    row = {r[0]: r for r in table_rows(text) if r[0].startswith(("mnist_", "babi_"))}
    s = ratio_stats(BASE_MS, FAST_MS)
    mlp = rows_starting(text, "mnist_mlp fit")
    assert mlp[0] == ["mnist_mlp fit", "classic", "smoke", "5 / 5", f"{s.ratio:.3f} [{s.ci_low:.3f}, {s.ci_high:.3f}]",
                      f"{s.p_value:.3f}", "faster", "-0.50 (epoch)", "n/a", "n/a / n/a", "n/a / n/a"]
    assert row["mnist_cnn fit"][6] == "no detectable change"
    assert row["babi_rnn fit"][3:7] == ["1 / 1", "1.200", "n/a", "too few repeats"]
    # Keras overhead: keras3-jax over jax on the one cell both ran, none for keras3-torch without pytorch
    assert "## Keras overhead" in lines and "### keras3-jax / jax" in lines
    assert "### keras3-torch / pytorch" not in lines
    over = mlp[1]
    s = ratio_stats(FAST_MS, BASE_MS)
    assert over[:4] == ["mnist_mlp fit", "classic", "smoke", "5 / 5"] and over[4].startswith(f"{s.ratio:.3f} [")
    assert over[6] == "slower"
    assert "Keras is slower than the native code" in text
    plots = tmp_path / "out" / "plots" / "versions"
    assert (plots / "versions_ratio.png").exists() and (plots / "keras_overhead_ratio.png").exists()
    assert "![Versions: ms/step ratio candidate/base](plots/versions/versions_ratio.png)" in lines


def test_keras_overhead_rows_say_where_each_side_made_its_batches(tmp_path):
    """keras3-torch's default pipeline copies NumPy batches each step, pytorch's holds the set on the device: the
    overhead row says so (native first), because its ratio then includes that copy."""
    recs = []
    for stack, where in (("pytorch", "device (torch tensors: the whole set)"), ("keras3-torch", "host (NumPy)")):
        c, r = cell_record(stack, "mnist_mlp", BASE_MS)
        r["settings"] = {"train_data_placement": where}
        recs.append((c, r))
    runs, _ = load_runs([run_csv(tmp_path, recs)])
    text = write_report(runs, tmp_path / "out").read_text()
    row = rows_starting(text, "mnist_mlp fit")
    assert len(row) == 1 and row[0][-2:] == ["device / host", "n/a / n/a"]
    assert "training data pytorch / keras3-torch" in text and "the ratio includes that copy" in text


@pytest.mark.parametrize(("settings", "shown"), [
    ({"progress": "keras_tqdm", "keras_async_batch_end": False}, "keras_tqdm, async off"),
    ({"progress": "none", "keras_async_batch_end": True}, "none, async on"),
    ({"progress": "bar"}, "bar")])
def test_keras_overhead_rows_say_how_each_side_reads_a_steps_results(tmp_path, settings, shown):
    """The classic default's notebook callback turns off Keras 3's asynchronous batch-end dispatch on JAX and
    PyTorch (the host waits for every step's logs), while the twins read once per epoch at sync=epoch: each
    overhead row shows both (native first), and the section says what it means for the ratio."""
    recs = []
    for stack, given in (("jax", {}), ("keras3-jax", settings)):
        c, r = cell_record(stack, "mnist_mlp", BASE_MS)
        r["settings"] = given
        r["metrics"]["sync"] = "epoch"
        recs.append((c, r))
    runs, _ = load_runs([run_csv(tmp_path, recs)])
    text = write_report(runs, tmp_path / "out").read_text()
    row = rows_starting(text, "mnist_mlp fit")
    assert len(row) == 1 and row[0][-2:] == ["n/a / n/a", f"sync=epoch / {shown}"]
    assert "step results read jax / keras3-jax" in text
    assert "the host waits for each step, which the native loop does not; its ratio includes those waits" in text


def test_memory_delta_in_mib_and_no_sections_without_pairs(tmp_path, derived):
    csv = run_csv(tmp_path, [cell_record("keras3-jax", "mnist_mlp", BASE_MS, peak=3 * 2**30),
                             cell_record(DERIVED, "mnist_mlp", BASE_MS, peak=3 * 2**30 + 512 * 2**20)])
    df = pd.read_csv(csv)
    table = versions.version_tables(df)[0]
    assert table.rows[0]["peak_delta_mib"] == pytest.approx(512.0)
    assert "shuffled with seed 1" in table.order  # no order rule recorded: the shuffled rounds' seed
    alone = df[df["stack"] == "keras3-jax"]
    assert versions.version_tables(alone) == [] and versions.overhead_tables(alone) == []
    runs, _ = load_runs([csv])
    text = write_report([("r", alone)], tmp_path / "out").read_text()
    assert "## Versions" not in text and "## Keras overhead" not in text
    assert len(runs) == 1


def test_pins_and_base_come_from_the_records_when_they_hold_them(monkeypatch):
    """A version stack unknown to this checkout's stack list is still paired through its rows' recorded base, and
    the pins shown are the ones the records hold (as installed), not the declaration's."""
    monkeypatch.setattr(versions, "STACK_BASE_COL", "env.stack_base")
    monkeypatch.setattr(versions, "PINS_COL", "env.pins")
    common = {"suite": "classic", "workload": "mnist_mlp", "task": "fit", "size": "smoke", "variant": "default",
              "device": "cpu", "status": "ok"}
    df = pd.DataFrame([
        {**common, "stack": "keras3-jax", "metrics.ms_per_step_mean": 10.1,
         "repeats.ms_per_step_mean.values": BASE_MS},
        {**common, "stack": "keras3-jax--jax-0.9.2", "env.stack_base": "keras3-jax",
         "env.pins.jax": "0.9.2", "env.pins.jaxlib": "0.9.2", "metrics.ms_per_step_mean": 10.1,
         "repeats.ms_per_step_mean.values": SAME_MS}])
    assert versions.version_pairs(df) == [("keras3-jax", "keras3-jax--jax-0.9.2")]
    assert versions.pins_of(df, "keras3-jax--jax-0.9.2") == ["jax==0.9.2", "jaxlib==0.9.2"]
    assert "- Pins that differ: `jax==0.9.2`, `jaxlib==0.9.2`" in versions.versions_section(
        versions.version_tables(df), {})
    df["env.pins"] = [["jax==0.9.1"]] * len(df)
    assert versions.pins_of(df, "keras3-jax--jax-0.9.2")[0] == "jax==0.9.1"


def test_a_derived_stack_declares_its_base_and_pins_last():
    import dataclasses

    names = [f.name for f in dataclasses.fields(Stack)]
    assert names[-2:] == ["base", "pins"]
    assert STACKS["keras3-jax"].base is None and STACKS["keras3-jax"].pins == ()


def pair_rows(derived_rows, base_rows):
    row = {"suite": "classic", "workload": "mnist_mlp", "task": "fit", "size": "smoke", "variant": "default",
           "device": "cpu", "status": "ok", "metrics.ms_per_step_mean": 10.1,
           "repeats.ms_per_step_mean.values": BASE_MS}
    return pd.DataFrame([{**row, "stack": DERIVED, **r} for r in derived_rows]
                        + [{**row, "stack": "keras3-jax", **r} for r in base_rows])


def test_a_pair_whose_cells_were_all_left_out_says_so(derived):
    """Both stacks ran the cell, twice each: it is left out (which row to compare would be a guess), and the section
    said "No ok cell ran on both stacks." without the reason; the Keras-overhead pair vanished."""
    df = pair_rows([{}, {}], [{}, {}])
    lines = versions.versions_section(versions.version_tables(df), {})
    assert "No ok cell ran on both stacks." not in lines
    assert "No cell compared." in lines and "Left out: mnist_mlp fit: several ok rows for one cell." in lines
    over = df.assign(stack=df["stack"].map({DERIVED: "keras3-jax", "keras3-jax": "jax"}))
    assert "Left out: mnist_mlp fit: several ok rows for one cell." in versions.overhead_section(
        versions.overhead_tables(over), {})


def test_the_order_line_counts_rows_outside_rounds_and_names_the_seed(derived):
    """The order line read only the rows that recorded a rule: a pair whose base ran outside rounds said
    "Order: shuffled". It is the Method section's reading: rounds, rule with its seed, rows outside rounds."""
    sched = {"schedule.seed": 3, "schedule.rounds": 4, "schedule.order_rule": "shuffled"}
    order = versions.version_tables(pair_rows([sched], [{}]))[0].order
    assert order == ("4 round(s), every stack once per round in an order shuffled with seed 3 (`schedule.*` in each "
                     "row); 1 row(s) not run in rounds (no `schedule`)")


def test_a_cell_that_failed_on_a_side_is_named_and_the_order_reads_every_row(derived):
    """A candidate whose cell failed: the Versions section said "No ok cell ran on both stacks." without naming it,
    its order line read only ok rows ("not run in rounds" of failed rows run in abba rounds), and a Keras-overhead
    pair whose Keras side failed vanished. Unsupported cells (by design) are not listed."""
    abba = {"schedule.seed": 1, "schedule.rounds": 4, "schedule.order_rule": "abba"}
    df = pair_rows([{**abba, "status": "failed", "reason": "RuntimeError: boom\nsecond line",
                     "metrics.ms_per_step_mean": None, "repeats.ms_per_step_mean.values": None}], [abba])
    (table,) = versions.version_tables(df)
    assert table.order.startswith("4 round(s), every stack once per round in the abba order")
    lines = versions.versions_section([table], {})
    assert f"Left out: mnist_mlp fit: keras3-jax ok, {DERIVED} failed (RuntimeError: boom)." in lines
    over = df.assign(stack=df["stack"].map({DERIVED: "keras3-jax", "keras3-jax": "jax"}))
    assert "Left out: mnist_mlp fit: jax ok, keras3-jax failed (RuntimeError: boom)." in versions.overhead_section(
        versions.overhead_tables(over), {})
    unsupported = over.assign(status=over["status"].replace("failed", "unsupported"))
    assert versions.overhead_tables(unsupported) == []


def test_a_versions_row_without_a_ratio_says_why(derived):
    """The Versions table read ``n/a`` with no reason beside it where ``bench compare`` gives one (a repeat that is no
    positive finite time): the verdict says it, by ``PairStats.reason``."""
    df = pair_rows([{"repeats.ms_per_step_mean.values": [10.0, float("nan"), 10.2]}], [{}])
    lines = versions.versions_section(versions.version_tables(df), {})
    row = rows_starting("\n".join(lines), "mnist_mlp fit")[0]
    assert row[4:7] == ["n/a", "n/a", "n/a: a value is not a positive finite number (nan)"]
    assert ratio_stats(BASE_MS, [0.0, 1.0]).time_verdict_text == "n/a: a value is not a positive finite number (0.0)"


# ---- the printed numbers beside the verdict ---------------------------------------------------------------------

NEAR_A = [10.0, 10.01, 10.02, 10.03, 10.04]
NEAR_B = [v * 1.0199 for v in NEAR_A]  # 1.99 % slower: p 0.008 and an interval above 1, under the 2 % threshold


def test_a_ratio_within_rounding_of_the_threshold_prints_the_digits_that_keep_it_below(tmp_path, derived):
    """bench compare printed 1.0199 as 1.02, the report's Versions table as 1.020, beside "no detectable change" at
    a 2 % threshold: the number read as 2 %, the verdict said under it."""
    import subprocess
    import sys

    s = ratio_stats(NEAR_A, NEAR_B)
    assert s.verdict == "noise" and s.p_value < 0.05 and s.ci_low > 1 and 1.0198 < s.ratio < 1.02
    row = {"stack": "pytorch", "suite": "tuning", "workload": "w", "task": "fit", "size": "full", "variant": "x",
           "device": "gpu", "status": "ok"}
    for name, values in (("a", NEAR_A), ("b", NEAR_B)):
        pd.DataFrame([{**row, "metrics.ms_per_step_mean": float(np.median(values)),
                       "repeats.ms_per_step_mean.values": values}]).to_csv(tmp_path / f"{name}.csv", index=False)
    p = subprocess.run([sys.executable, "-m", "bench", "compare", str(tmp_path / "a.csv"), str(tmp_path / "b.csv")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    (line,) = [ln for ln in p.stdout.splitlines() if ln.lstrip().startswith("pytorch")]
    assert " 1.0199 " in line and " noise " in line and " 1.02 " not in line
    csv = run_csv(tmp_path, [cell_record("keras3-jax", "mnist_mlp", NEAR_A), cell_record(DERIVED, "mnist_mlp", NEAR_B)])
    text = write_report(load_runs([csv])[0], tmp_path / "out").read_text()
    (cells,) = rows_starting(text, "mnist_mlp fit")[:1]
    assert cells[4].startswith("1.0199 [") and cells[6] == "no detectable change"


@pytest.mark.parametrize("value, digits, test, shown", [
    (1.0199, 3, cmp.rule_tests()["ratio"], "1.0199"),  # no change: not 1.020
    (0.98004, 3, cmp.rule_tests()["ratio"], "0.98004"),  # 1.996 % faster, no change: not 0.980
    (0.97996, 3, cmp.rule_tests()["ratio"], "0.980"),  # a change: 0.980 is 2 % too
    (1.031, 3, cmp.rule_tests()["ratio"], "1.031"),
    (1.00004, 3, cmp.rule_tests()["ci_low"], "1.00004"),  # the interval excludes 1: not 1.000
    (0.99996, 3, cmp.rule_tests()["ci_high"], "0.99996"),
    (0.049996, 3, cmp.rule_tests()["p_value"], "0.049996"),  # p < 0.05: not 0.050
    (0.0500001, 3, cmp.rule_tests()["p_value"], "0.050"),
    (float("nan"), 3, cmp.rule_tests()["ratio"], "n/a"),
])
def test_fmt_beside_keeps_a_number_on_its_side_of_the_rule(value, digits, test, shown):
    from bench.results.report.common import fmt_beside

    assert fmt_beside(value, digits, test) == shown

"""The report's Method section: cadence, rounds and drift, and the correctness gate, from records only."""

import math

import pandas as pd

from bench.results.report.method import correctness_flags, method_section, round_drift
from tests.helpers.tables import rows_starting


def row(stack, acc, loss=(2.0, 1.0), size="full", source="real", ms=(10.0, 10.0), workload="mnist_cnn",
        n_val=10000):
    return {"stack": stack, "data.n_val": n_val, "suite": "classic", "workload": workload, "task": "fit", "size": size,
            "variant": "default", "batch_size": 128, "status": "ok", "data.source": source,
            "history.loss": list(loss), "history.val_accuracy": [0.5, acc],
            "settings.sync": "epoch", "metrics.ms_per_step_basis": "epoch", "settings.tf32": "default",
            "schedule.seed": 1, "schedule.rounds": len(ms), "repeats.ms_per_step_mean.values": list(ms),
            "repeats.schedule": [{"round": k, "position": 1} for k in range(1, len(ms) + 1)]}


def test_a_stack_that_learns_less_than_the_others_is_flagged_with_the_median():
    df = pd.DataFrame([row("keras3-tf", 0.990), row("keras3-jax", 0.988), row("keras3-torch", 0.880),
                       row("pytorch", 0.991)])
    flags = correctness_flags(df)
    assert [(f["stack"], f["check"]) for f in flags] == [("keras3-torch", "val_accuracy")]
    assert flags[0]["median"] == "0.9890"
    text = "\n".join(method_section(df))
    assert rows_starting(text, "keras3-torch") == [["keras3-torch", "mnist_cnn", "default", "", "val_accuracy",
                                                    "0.8800", "0.9890", "+-0.0200"]]
    assert "did not learn like the others" in text



def test_a_cell_of_other_inputs_is_neither_compared_with_nor_flagged_for_the_default_cell():
    """Four stacks' default mnist_cnn cells learn alike; pytorch's 3-epoch cell (its id names epochs=3) reaches 0.95:
    not held to the 12-epoch cells' median. pytorch's batch-64 cell whose loss did not fall is flagged as that cell
    (its inputs in the Method table), and its ⚠ stays on it in the classic table, not on pytorch's default cell. The
    old gate grouped by batch alone (the 3-epoch cell flagged) and keyed flags on stack, workload and variant (the
    default cell marked ⚠ too)."""
    from bench.results.report.classic import classic_section
    from bench.results.report.common import Footnotes

    cid = "{}__classic__mnist_cnn__fit__full__default"
    rows = [{**row(s, a), "cell_id": cid.format(s), "metrics.ms_per_step_mean": 1.0} for s, a in
            (("keras3-tf", 0.990), ("keras3-jax", 0.988), ("pytorch", 0.991), ("jax", 0.989))]
    rows += [{**row("pytorch", 0.95), "cell_id": cid.format("pytorch") + "__epochs=3", "metrics.ms_per_step_mean": 2.0},
             {**row("pytorch", 0.99, loss=(2.0, 2.1)), "batch_size": 64, "cell_id": cid.format("pytorch") +
              "__batch_size=64", "metrics.ms_per_step_mean": 3.0}]
    df = pd.DataFrame(rows)
    assert [(f["stack"], f["check"]) for f in correctness_flags(df)] == [("pytorch", "loss did not fall")]
    table = "\n".join(classic_section(df, Footnotes()))
    assert rows_starting(table, "mnist_cnn", "fit")[0][-2:] == ["1.00", "1.00"]  # pytorch, jax: no ⚠
    assert rows_starting(table, "mnist_cnn (batch_size=64)", "fit")[0][-2] == "3.00 ⚠"
    assert rows_starting(table, "mnist_cnn (epochs=3)", "fit")[0][-2] == "2.00"
    assert [f["inputs"] for f in correctness_flags(df)] == ["batch_size=64"]
    assert rows_starting("\n".join(method_section(df)), "pytorch") == [
        ["pytorch", "mnist_cnn", "default", "batch_size=64", "loss did not fall", "2 -> 2.1", "", ""]]


def test_the_accuracy_groups_read_a_cells_inputs_as_bench_compare_matches_them():
    """A group of the accuracy check holds the inputs column ``bench compare`` matches cells on (``compare.INPUTS``,
    written by ``compare.with_inputs``): one reading of a cell id's inputs, not a second column made beside it."""
    from bench.results.compare import INPUTS, with_inputs
    from bench.results.report.method import accuracy_groups

    cid = "{}__classic__mnist_cnn__fit__full__default__epochs=3"
    df = pd.DataFrame([{**row(s, a), "cell_id": cid.format(s)} for s, a in
                       (("keras3-tf", 0.990), ("keras3-jax", 0.988), ("pytorch", 0.991))])
    [(_, group)] = accuracy_groups(df)
    assert list(group[INPUTS]) == list(with_inputs(df)[INPUTS]) == ["epochs=3"] * 3
    assert [c for c in group.columns if c.endswith("inputs")] == [INPUTS]


def test_babi_rows_within_binomial_noise_of_1000_questions_are_not_flagged():
    """bAbI qa2 (1k) scores 1000 test questions: at ~35 % the SE of the difference of two accuracies is 2.1 points,
    so rows 3-5 points from the median learned like the others (the fixed 2-point band flagged them); a row that
    did not learn (18 %, near the most frequent answer's share) is still flagged. MNIST keeps 2 points."""
    babi = [row(s, a, workload="babi_rnn", n_val=1000) for s, a in
            (("keras2-tf", 0.352), ("keras3-tf", 0.31), ("keras3-jax", 0.385), ("pytorch", 0.34), ("jax", 0.36))]
    assert correctness_flags(pd.DataFrame(babi)) == []
    flags = correctness_flags(pd.DataFrame([*babi, row("keras3-torch", 0.18, workload="babi_rnn", n_val=1000)]))
    median = (0.34 + 0.352) / 2  # of the six rows
    assert [(f["stack"], f["band"]) for f in flags] == [
        ("keras3-torch", f"+-{3.29 * math.sqrt(2 * median * (1 - median) / 1000):.4f}")]
    # MNIST's 10000 images: binomial noise is well inside 2 points, which stays the band (a 2.5-point gap flags)
    mnist = [row("keras3-tf", 0.990), row("keras3-jax", 0.988), row("pytorch", 0.991), row("keras3-torch", 0.965)]
    assert [(f["stack"], f["band"]) for f in correctness_flags(pd.DataFrame(mnist))] == [("keras3-torch", "+-0.0200")]
    # a record without data.n_val gets the 2-point band
    assert [f["stack"] for f in correctness_flags(pd.DataFrame([{**r, "data.n_val": None} for r in babi]))] == [
        "keras3-tf", "keras3-jax"]


def test_accuracy_is_only_compared_at_full_size_on_real_data_and_loss_must_fall_everywhere():
    smoke = [row(s, a, size="smoke", source="synthetic") for s, a in
             (("keras3-tf", 0.1), ("keras3-jax", 0.5), ("pytorch", 0.9))]
    assert correctness_flags(pd.DataFrame(smoke)) == []
    flat = row("keras2-tf", 0.1, loss=(2.3, 2.31), size="smoke", source="synthetic")
    flags = correctness_flags(pd.DataFrame([*smoke, flat]))
    assert [(f["stack"], f["check"]) for f in flags] == [("keras2-tf", "loss did not fall")]
    text = "\n".join(method_section(pd.DataFrame(smoke)))
    assert "only the loss check applied" in text and "No row flagged." in text


def test_drift_compares_each_stacks_last_round_with_its_first():
    df = pd.DataFrame([row("keras3-jax", 0.99, ms=(10.0, 10.5, 11.0)), row("pytorch", 0.99, ms=(8.0, 8.0, 8.0)),
                       row("pytorch", 0.99, ms=(4.0, 4.0, 5.0), workload="mnist_mlp")])
    assert round_drift(df) == [("keras3-jax", 1, 1.1), ("pytorch", 2, 1.125)]
    text = "\n".join(method_section(df))
    assert "3 round(s), every stack once per round in an order shuffled with seed 1" in text
    assert "keras3-jax 1.100 (1 cells)" in text
    assert "`epoch` 3" in text  # cadence counts from settings.sync


def test_drift_reads_the_round_each_repeat_ran_in_and_says_where_no_record_tells():
    """round_drift took repeat r to have run in round r. The records say where each ran (``repeats.schedule``): a
    cell whose repeat 1 ran in round 3 has its last round first; one whose repeats do not all say (a repeat reused
    from a run outside rounds, a record from before the field) is not read, and the Method says drift was not
    checked there rather than assume."""
    late = row("keras3-jax", 0.99, ms=(12.0, 10.0, 11.0))
    late["repeats.schedule"] = [{"round": 3, "position": 2}, {"round": 1, "position": 1}, {"round": 2, "position": 2}]
    assert round_drift(pd.DataFrame([late])) == [("keras3-jax", 1, 1.2)]
    reused = row("pytorch", 0.99, ms=(8.0, 9.0, 10.0))
    reused["repeats.schedule"] = [{"round": None, "position": None}, {"round": 2, "position": 1},
                                  {"round": 3, "position": 1}]
    older = {**row("pytorch", 0.99, ms=(8.0, 9.0)), "repeats.schedule": None}
    df = pd.DataFrame([late, reused, older])
    assert round_drift(df) == [("keras3-jax", 1, 1.2)]
    text = "\n".join(method_section(df))
    assert "- Drift, last round's / first round's mean ms/step (median over a stack's cells): keras3-jax 1.200" in text
    assert ("- Drift not checked on pytorch (2 cells): their records do not say which round each repeat ran in "
            "(`repeats.schedule`)") in text
    assert "Drift not checked" not in "\n".join(method_section(pd.DataFrame([late])))


def test_records_without_rounds_or_cadence_say_so():
    df = pd.DataFrame([{"stack": "pytorch", "suite": "classic", "workload": "mnist_mlp", "task": "fit",
                        "size": "smoke", "variant": "default", "status": "ok", "data.source": "synthetic"}])
    text = "\n".join(method_section(df))
    assert "not run in rounds" in text and "cadence (`settings.sync`: where the timer waits for the device): " \
                                           "not recorded" in text


def test_rows_that_break_a_rule_are_listed_and_flagged_cells_are_marked_in_the_table():
    from bench.results.report.classic import classic_section
    from bench.results.report.common import Footnotes

    rows = [row("keras3-tf", 0.990), row("keras3-jax", 0.988), row("keras3-torch", 0.880), row("pytorch", 0.991)]
    rows[0].update({"gpu_before.processes": 2, "telemetry.throttled": False, "env.gpu.mig_mode": False,
                    "metrics.ms_per_step_mean": 3.0})
    rows[1].update({"gpu_before.processes": 0, "telemetry.throttled": True, "metrics.ms_per_step_mean": 2.0})
    rows[2].update({"metrics.ms_per_step_mean": 1.0})
    rows[3].update({"metrics.ms_per_step_mean": 4.0, "data.source": "synthetic"})
    df = pd.DataFrame(rows)
    text = "\n".join(method_section(df))
    assert "  - GPU busy: another process was on the GPU: keras3-tf mnist_cnn default" in text
    assert ("  - throttled: thermal or hardware clock-event reasons in the timed window: "
            "keras3-jax mnist_cnn default") in text
    assert "MIG" not in text.split("Rows that break a rule")[1].split("Checked on some rows only")[0]
    table = "\n".join(classic_section(df, Footnotes()))
    assert rows_starting(table, "mnist_cnn", "fit") == [["mnist_cnn", "fit", "3.00", "2.00", "1.00 ⚠", "4.00 (syn)"]]
    assert "⚠: flagged by the correctness gate" in table and "(syn): synthetic data" in table
    kept = row("pytorch", 0.99)
    kept.update({"gpu_before.processes": 0, "gpu_before.seen_from": "host pid namespace",
                 "telemetry.throttled": False, "env.gpu.mig_mode": False, "process.host_contended": False})
    assert ("- No row broke a rule (checked: GPU busy, MIG mode, throttled, CPU contended)."
            in "\n".join(method_section(pd.DataFrame([kept]))))


def test_a_rule_no_record_holds_a_field_for_is_said_unchecked_not_kept():
    """Records from before ``process.host_contended`` (and a CPU run's, which hold no GPU field) cannot tell whether
    a rule was kept: the Method says which were not checked. Before, such a report said "No row broke a rule
    (..., CPU contended)" of records that never measured it."""
    old = row("pytorch", 0.99)
    old.update({"gpu_before.processes": 0, "gpu_before.seen_from": "host pid namespace", "telemetry.throttled": False,
                "env.gpu.mig_mode": False})
    text = "\n".join(method_section(pd.DataFrame([old])))
    assert "- No row broke a rule (checked: GPU busy, MIG mode, throttled)." in text
    assert "- Not checked, no record lets us: CPU contended (`process.host_contended`)" in text
    text = "\n".join(method_section(pd.DataFrame([row("pytorch", 0.99)])))
    assert "No row broke a rule" not in text and "Rows that break" not in text
    assert ("Not checked, no record lets us: GPU busy (`gpu_before.processes` counted in the host's PID namespace, "
            "`gpu_before.seen_from`), MIG mode") in text


def test_an_abba_run_is_not_said_to_be_shuffled_and_rows_outside_rounds_are_counted():
    """compare-versions' rounds run in the abba order, which no seed shuffles: the line said "shuffled with seed 1"
    of them (results/ledger-cpu's versions run)."""
    abba = [{**row(s, 0.99, ms=(10.0, 10.0, 10.0, 10.0)), "schedule.order_rule": "abba"}
            for s in ("keras3-jax", "keras3-jax--keras-3.14.1--keras-hub-0.29.1")]
    text = "\n".join(method_section(pd.DataFrame(abba)))
    assert "4 round(s), every stack once per round in the abba order" in text and "shuffled" not in text
    loose = {**row("pytorch", 0.99), "schedule.seed": None, "schedule.rounds": None}
    text = "\n".join(method_section(pd.DataFrame([row("jax", 0.99), loose])))
    assert "in an order shuffled with seed 1 (`schedule.*` in each row); 1 row(s) not run in rounds" in text


def test_repeats_run_back_to_back_are_not_reported_as_drift_between_rounds():
    """bench run --repeats 2 without rounds: the Method said "Order: not run in rounds" and then "Drift, last round's
    / first round's mean ms/step: pytorch 0.998" of the cell's two back-to-back repeats."""
    df = pd.DataFrame([{**row("pytorch", 0.99, ms=(10.0, 12.0)), "schedule.seed": None, "schedule.rounds": None}])
    assert round_drift(df) == []
    text = "\n".join(method_section(df))
    assert "not run in rounds" in text and "Drift" not in text


def test_the_gate_says_which_fit_rows_it_could_not_check():
    """A paper run's step cells record no loss history: the gate said "No row flagged." of rows it never read."""
    steps = [{**row(s, 0.99), "suite": "paper", "history.loss": None, "history.val_accuracy": None}
             for s in ("keras3-jax", "pytorch")]
    text = "\n".join(method_section(pd.DataFrame(steps)))
    assert "- Not checked: none of the 2 ok fit row(s) records a training loss" in text
    assert "No row flagged" not in text
    one_epoch = {**row("keras3-tf", 0.99, loss=(2.0,), size="smoke", source="synthetic")}
    text = "\n".join(method_section(pd.DataFrame([row("jax", 0.99, size="smoke", source="synthetic"), one_epoch])))
    assert "- 1 of the 2 ok fit rows were not checked" in text and "- No row flagged." in text
    assert "only the loss check applied" in text


def test_a_rule_some_rows_lack_the_field_of_is_checked_on_those_that_hold_it_only():
    """Records from before process.host_contended beside newer ones: "No row broke a rule (checked: CPU contended)"
    spoke for rows that hold no such field."""
    new = {**row("pytorch", 0.99), "process.host_contended": False}
    old = {**row("jax", 0.99), "process.host_contended": None}
    text = "\n".join(method_section(pd.DataFrame([new, old])))
    assert "- No row broke a rule (checked: CPU contended (1 of 2 rows))." in text
    assert "- No row broke a rule (checked: CPU contended)." in "\n".join(method_section(pd.DataFrame([new])))


def test_a_gpu_busy_count_from_a_containers_pid_namespace_does_not_keep_the_rule():
    """NVML inside a container's own PID namespace lists none of another tenant's processes (``gpu_before.seen_from``
    says so): "No row broke a rule (checked: GPU busy ...)" was said of such zeros (a pod without hostPID)."""
    base = {"gpu_before.processes": 0, "telemetry.throttled": False, "env.gpu.mig_mode": False,
            "process.host_contended": False}
    pod = {**row("pytorch", 0.99), **base, "gpu_before.seen_from": "container pid namespace"}
    host = {**row("jax", 0.99), **base, "gpu_before.seen_from": "host pid namespace"}
    text = "\n".join(method_section(pd.DataFrame([pod])))
    assert "- No row broke a rule (checked: MIG mode, throttled, CPU contended)." in text
    assert "Not checked, no record lets us: GPU busy (`gpu_before.processes` counted in the host's PID" in text
    text = "\n".join(method_section(pd.DataFrame([pod, host])))
    assert "(checked: GPU busy (1 of 2 rows), MIG mode, throttled, CPU contended)" in text
    busy = {**pod, "gpu_before.processes": 1}  # a process it does see is busy, whoever's namespace counted it
    text = "\n".join(method_section(pd.DataFrame([busy, host])))
    assert "  - GPU busy: another process was on the GPU: pytorch mnist_cnn default" in text


def test_a_rule_checked_on_some_rows_is_named_so_beside_a_broken_one():
    """With one row throttled the section listed only that row: that CPU contended was checked on 1 of 2 rows
    (an older record beside a newer one) went unsaid."""
    new = {**row("pytorch", 0.99), "telemetry.throttled": True, "process.host_contended": False}
    old = {**row("jax", 0.99), "telemetry.throttled": False, "process.host_contended": None}
    text = "\n".join(method_section(pd.DataFrame([new, old])))
    assert "Rows that break a rule" in text and "- Checked on some rows only: CPU contended (1 of 2 rows)." in text


def test_rows_the_accuracy_check_read_are_not_said_unchecked():
    """Full-size real-data fit rows with one epoch have no loss to compare but do have a final val_accuracy the
    accuracy check reads: they were counted among the rows "not checked"."""
    rows = [{**row(s, acc, loss=(2.0,)), "history.val_accuracy": [acc]}
            for s, acc in (("jax", 0.99), ("pytorch", 0.98), ("keras3-jax", 0.985))]
    text = "\n".join(method_section(pd.DataFrame(rows)))
    assert "were not checked" not in text and "Not checked:" not in text and "- No row flagged." in text
    neither = {**row("keras3-torch", 0.99, loss=(2.0,)), "history.val_accuracy": None}  # in the group, read by none
    text = "\n".join(method_section(pd.DataFrame([*rows, neither])))
    assert "- 1 of the 4 ok fit rows were not checked" in text

"""The declared record schema (bench/results/schema/) and what derives from it."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from bench.core.atomic import write_json_atomic
from bench.core.knobs import DOCS
from bench.results import derived, schema
from bench.results.record import FIELDS, RecordError, read_record
from bench.results.repeats import AGGREGATED, DERIVED, aggregate
from bench.results.schema import Env, Metrics, Spread, Telemetry, col, setting_col, spread_col

ROOT = Path(__file__).resolve().parents[2]


def test_every_field_declares_help_unit_and_a_known_rule():
    for d in schema.walk():
        assert d.help and d.rule in schema.RULES, d.name
    assert all(schema.declare.rule_of(f) for f in Metrics.model_fields.values())


def test_aggregation_lists_come_from_the_declarations():
    assert tuple(n for n, f in Metrics.model_fields.items() if schema.declare.rule_of(f) == "median") == AGGREGATED
    assert set(DERIVED) == {"samples_per_s", "examples_per_s", "tokens_per_s", "achieved_tflops", "mfu",
                            "mfu_measured", "examples_per_j"}
    assert not set(AGGREGATED) & set(DERIVED)


def test_bench_fields_lists_every_declared_field_and_every_knob():
    names = set(FIELDS)
    assert {d.name for d in schema.walk()} <= {n.removesuffix(" (knob)") for n in names}
    assert {"settings.jit_compile (knob)", "settings.tf32 (knob)", "settings.sync (knob)"} <= names
    assert "[ms; repeats: median]" in FIELDS["metrics.ms_per_step_mean"]
    assert "repeats: derived" in FIELDS["metrics.mfu"]


def test_col_names_declared_fields_and_fails_loudly_for_unknown_ones():
    assert col(Metrics, "mfu") == "metrics.mfu"
    assert col(Telemetry, "power_w", "mean") == "telemetry.power_w.mean"
    assert col(Env, "gpu", "mig_mode") == "env.gpu.mig_mode"
    assert col(Env, "packages", "jax") == "env.packages.jax"  # an open mapping
    assert setting_col("tf32_matmul") == "settings.tf32_matmul" and setting_col("sync") == "settings.sync"
    assert spread_col("ms_per_step_mean", "cv") == "repeats.ms_per_step_mean.cv"
    for bad in (lambda: col(Metrics, "ms_per_stepmean"), lambda: col(Telemetry, "power_w", "avg"),
                lambda: setting_col("no_such_knob"), lambda: spread_col("flops_per_step", "cv"),
                lambda: col(Env, "gpu", "nam")):
        with pytest.raises(KeyError):
            bad()


def test_report_and_compare_use_no_literal_block_columns():
    """Every "block.field" column in report/ and compare.py is built with col(), so a renamed field breaks it."""
    literal = re.compile(r"""["'](metrics|settings|telemetry|repeats|env|model|memory|data|process)\.[a-z_]""")
    files = [*sorted((ROOT / "bench/results/report").glob("*.py")), ROOT / "bench/results/compare.py"]
    hits = [f"{p.name}:{i}" for p in files for i, line in enumerate(p.read_text().splitlines(), 1)
            if literal.search(line) and not line.lstrip().startswith(("#", '"', "'")) and "`" not in line]
    assert hits == []


def test_csv_column_order_follows_the_declarations():
    cols = ["zz.open", "env.python", "metrics.mfu", "status", "stack", "settings.tf32", "metrics.ms_per_step_mean",
            "env.packages.jax"]
    order = schema.column_order(cols)
    assert order[:3] == ["stack", "status", "metrics.ms_per_step_mean"]  # LEADING
    assert order.index("settings.tf32") < order.index("metrics.mfu") < order.index("env.python")  # declared order
    assert order[-2:] == ["env.packages.jax", "zz.open"]  # undeclared: alphabetical, last


def _records():
    for p in sorted((ROOT / "results").rglob("*.json")):
        data = json.loads(p.read_text())
        if isinstance(data, dict) and "schema_version" in data:
            yield p


def test_schema_version_2_records_in_results_still_load():
    paths = list(_records())
    assert paths and any(json.loads(p.read_text())["schema_version"] == 2 for p in paths)
    for p in paths:
        read_record(p)


def test_the_2017_metric_has_its_own_field_and_schema_3s_fit_s_per_epoch_loads_as_recorded():
    """Schema 4: the 2017 metric is fit_call_s_per_epoch (the whole call over the epochs), the spans' mean
    fit_epoch_s_mean; fit_s_per_epoch, which meant the call over the epochs in records without fit_epoch_s and the
    spans' mean in schema 3 records with it, is no longer written and loads from the committed records of both as
    recorded, its declaration saying which meaning when."""
    assert schema.SCHEMA_VERSION == 4
    fields = Metrics.model_fields
    assert "fit_call_s / epochs" in fields["fit_call_s_per_epoch"].description
    assert "no longer written" in fields["fit_s_per_epoch"].description
    assert {"fit_call_s_per_epoch", "fit_epoch_s_mean"} <= set(AGGREGATED)
    old = [(p, json.loads(p.read_text())["metrics"]) for p in _records()
           if "fit_s_per_epoch" in (json.loads(p.read_text()).get("metrics") or {})]
    assert {"fit_epoch_s" in m for _, m in old} == {True, False}  # both meanings are committed
    for p, m in old:
        rec = read_record(p)
        assert rec["schema_version"] <= 3 and rec["metrics"]["fit_s_per_epoch"] == m["fit_s_per_epoch"]
        assert "fit_call_s_per_epoch" not in rec["metrics"]  # never filled in from another field


def test_records_that_call_the_image_flavor_by_its_old_name_still_load(tmp_path):
    """env.image_variant, the image's cpu/gpu flavor before it was called env.image_flavor: committed records hold it,
    and they load with it kept as it is (an undeclared key)."""
    declared = set(Env.model_fields)
    assert "image_flavor" in declared and "image_variant" not in declared
    old = [p for p in _records() if "image_variant" in (json.loads(p.read_text()).get("env") or {})]
    assert old
    for p in old:
        assert read_record(p)["env"]["image_variant"] in ("cpu", "gpu", None)


def test_a_record_that_does_not_fit_the_schema_is_named_and_skipped(tmp_path):
    rec = json.loads(next(_records()).read_text())
    bad = {**rec, "metrics": {**rec["metrics"], "ms_per_step_mean": "fast"}, "telemetry": None}
    write_json_atomic(tmp_path / "x.json", bad)
    with pytest.raises(RecordError, match=r"metrics.ms_per_step_mean is str, declared .*telemetry is null"):
        read_record(tmp_path / "x.json")


def _aggregate(*records):
    """The aggregation of repeat records given as their JSON, as JSON."""
    return aggregate([schema.Record.model_validate(r) for r in records]).model_dump(exclude_unset=True)


def _energy_rec(k, j_epoch, ms):
    n, steps = 60000, 469
    m = {"ms_per_step_mean": ms, "steady_epoch_s": ms * steps / 1000, "samples_per_s": n / (ms * steps / 1000),
         "j_per_epoch": j_epoch, "j_per_step": j_epoch / steps, "examples_per_j": n / j_epoch}
    return {"status": "ok", "repeat": k, "batch_size": 128, "data": {"n_train": n}, "metrics": m,
            "process": {"wall_s": 1.0}}


def test_examples_per_j_belongs_to_the_aggregated_energy():
    """Two repeats of 100 and 300 J/epoch: the row's 200 J/epoch gives 300 examples/J, not the median of the
    repeats' 600 and 200 examples/J (400), which belongs to no repeat's energy."""
    agg = _aggregate(_energy_rec(1, 100.0, 10.0), _energy_rec(2, 300.0, 10.0))["metrics"]
    assert agg["j_per_epoch"] == 200.0
    assert agg["examples_per_j"] == pytest.approx(60000 / 200.0)


def test_an_augmented_cells_throughput_counts_the_examples_its_epochs_trained():
    """cifar10_cnn's augmented epochs are full batches: --samples 1000 at batch 32 trains 31 x 32 = 992 an epoch. The
    worker's samples_per_s was 992 / steady_epoch_s (``EpochTimer.summary``), the aggregated record's (even of one
    repeat) 1000 / steady_epoch_s: data.n_train, 8 examples each epoch never trained (keras3-jax, CPU: 459.3 in the
    repeat, 463.0 in the cell's record). Both now divide metrics.examples_per_epoch, and so does examples/J."""
    from bench.instruments.timing import EpochTimer

    timer = EpochTimer(lambda: None)
    timer.intervals = [[(3.0, 31)], [(2.0, 31)]]
    m = timer.summary(batch_size=32, n_train=992)
    m.update(j_per_epoch=10.0, examples_per_j=992 / 10.0)
    assert m["examples_per_epoch"] == 992 and m["samples_per_s"] == pytest.approx(496.0)
    one = {"status": "ok", "repeat": 1, "batch_size": 32, "data": {"n_train": 1000}, "metrics": m,
           "process": {"wall_s": 1.0}}
    agg = _aggregate(one)["metrics"]
    assert agg["samples_per_s"] == pytest.approx(992 / 2.0) and agg["examples_per_j"] == pytest.approx(99.2)
    older = {**one, "metrics": {k: v for k, v in m.items() if k != "examples_per_epoch"}}  # before the field
    assert _aggregate(older)["metrics"]["samples_per_s"] == pytest.approx(1000 / 2.0)


@pytest.mark.parametrize("ms", [[10.0, 20.0, 30.0], [12.0, 13.0], [5.0]])
def test_after_aggregation_mfu_is_flops_over_time_over_peak(ms):
    def rec(k, t):
        m = {"ms_per_step_mean": t, "steps": 100, "flops_per_step": 3e12, "peak_flops": 1e15,
             "measured_peak_flops": 7e14, "examples_per_s": 0.0, "tokens_per_s": None, "achieved_tflops": 0.0,
             "mfu": 0.5, "mfu_measured": 0.5}
        typed = Metrics.model_validate(m)
        derived.step_throughput(typed, 8, None)
        derived.flops_rates(typed)
        m = typed.model_dump(exclude_unset=True)
        return {"status": "ok", "repeat": k, "batch_size": 8, "metrics": m, "process": {"wall_s": 1.0}}

    m = _aggregate(*(rec(k, t) for k, t in enumerate(ms, 1)))["metrics"]
    t = m["ms_per_step_mean"] / 1000
    assert m["mfu"] == pytest.approx(m["flops_per_step"] / t / m["peak_flops"])
    assert m["mfu_measured"] == pytest.approx(m["flops_per_step"] / t / m["measured_peak_flops"])
    assert m["achieved_tflops"] == pytest.approx(m["flops_per_step"] / t / 1e12)


def test_rederive_recomputes_every_declared_derived_metric():
    """Each metric declared ``derived`` has a formula: stale values are all replaced."""
    stale = -1.0
    step = {"status": "ok", "batch_size": 8, "settings": {"generated_tokens": 4},
            "metrics": {"ms_per_step_mean": 10.0, "steps": 100, "flops_per_step": 1e12, "peak_flops": 1e15,
                        "measured_peak_flops": 1e15, "j_per_epoch": 50.0,
                        **{k: stale for k in DERIVED if k != "samples_per_s"}}}
    fit = {"status": "ok", "batch_size": 8, "data": {"n_train": 1000},
           "metrics": {"steady_epoch_s": 2.0, "j_per_epoch": 10.0, "samples_per_s": stale, "examples_per_j": stale}}
    for rec in (step, fit):
        typed = schema.Record.model_validate(rec)
        derived.rederive(typed)
        rec["metrics"] = typed.metrics.model_dump(exclude_unset=True)
    seen = {k for r in (step, fit) for k, v in r["metrics"].items() if k in DERIVED and v != stale}
    assert seen == set(DERIVED)
    assert step["metrics"]["examples_per_j"] == pytest.approx(8 * 100 / 50.0)
    assert fit["metrics"]["examples_per_j"] == pytest.approx(1000 / 10.0)


def test_bench_fields_prints_the_declarations():
    from click.testing import CliRunner

    from bench.cli import cli

    out = CliRunner().invoke(cli, ["fields"])
    assert out.exit_code == 0
    lines = out.output.splitlines()
    assert len(lines) == len(FIELDS)
    assert any(line.startswith("metrics.examples_per_j: ") and "repeats: derived" in line for line in lines)


# ---- the engines' typed blocks and their JSON ----------------------------------------------------------------

def test_model_dump_writes_the_given_fields_a_given_null_included():
    """A block writes what its producer gave and nothing more: an explicit None stays a null (memory on a
    CPU), a field never set stays absent (no params_effective on Keras), an assigned one is given."""
    assert schema.Memory(device_peak_bytes=None).model_dump(exclude_unset=True) == {"device_peak_bytes": None}
    model = schema.Model(params_total=10, params_trainable=8)
    assert model.model_dump(exclude_unset=True) == {"params_total": 10, "params_trainable": 8}
    m = Metrics(epochs=2, steady_epoch_s=None)
    m.fit_call_s = 1.5
    assert m.model_dump(exclude_unset=True) == {"epochs": 2, "steady_epoch_s": None, "fit_call_s": 1.5}
    s = schema.EffectiveSettings(torch_version="2.13.0", precision="float32", torch_matmul_allow_tf32=False)
    assert s.model_dump(exclude_unset=True) == {"precision": "float32", "torch_matmul_allow_tf32": False,
                                                "torch_version": "2.13.0"}


def test_code_writes_declared_fields_only_validated_and_a_record_keeps_its_undeclared_keys():
    """Nothing writes through a block's undeclared keys: assigning one fails (pydantic with extra="allow" would keep
    it), an assigned value is validated; a record read back keeps its undeclared keys (older records'), last."""
    m = Metrics(epochs=2)
    with pytest.raises(AttributeError, match="declares no field 'not_declared'"):
        m.not_declared = 3
    with pytest.raises(ValidationError):
        m.epochs = "two"
    m.steps = np.int64(5)  # a framework's integer becomes the declared int
    assert type(m.steps) is int and not hasattr(schema.declare.Block, "update") and not hasattr(Metrics, "extra")
    old = Metrics.model_validate({"fit_s_per_epoch": 0.75, "epochs": 2, "not_declared": 3}, strict=True)
    assert list(old.model_dump(exclude_unset=True).items()) == [("epochs", 2), ("fit_s_per_epoch", 0.75),
                                                                ("not_declared", 3)]


def test_the_settings_block_declares_every_knob_first_in_the_registrys_order():
    """One list of knobs (``bench.core.knobs.DOCS``, from the families' settings classes): the settings block's
    first fields, each with the knob's meaning."""
    fields = list(schema.EffectiveSettings.model_fields.items())[:len(DOCS)]
    assert [(n, f.description) for n, f in fields] == list(DOCS.items())


def test_a_repeated_cells_spreads_are_declared_from_the_metrics_rules():
    """``repeats.<metric>``: one Spread field per metric with rule median or derived, none for another."""
    spreads = {n for n, f in schema.Repeats.model_fields.items() if schema.introspect.block_of(f.annotation) is Spread}
    assert spreads == set(AGGREGATED) | set(DERIVED)
    r = schema.Repeats(n=2, ms_per_step_mean=Spread(values=[1.0, 3.0], median=2.0, min=1.0, max=3.0, cv=0.7))
    assert r.spread("ms_per_step_mean").median == 2.0 and r.spread("steps") is None


def test_a_block_rejects_an_undeclared_keyword():
    """The engines build blocks with keywords (Metrics(**timer.summary(...))): a key the schema does not declare
    fails there, not in the collector."""
    with pytest.raises(TypeError):
        Metrics(ms_per_stepmean=1.0)  # type: ignore[call-arg]


def test_a_settings_block_of_other_types_loads_as_recorded(tmp_path):
    """The settings block is checked as a mapping only: an effective setting of another type than declared (a
    knob's type changed across schema versions) still loads, its value as recorded."""
    rec = json.loads(next(_records()).read_text())
    write_json_atomic(tmp_path / "x.json", {**rec, "settings": {**rec.get("settings", {}), "tf32_matmul": "on"}})
    assert read_record(tmp_path / "x.json")["settings"]["tf32_matmul"] == "on"


def test_examples_per_j_says_the_examples_its_formula_reads():
    """A fit cell's examples/J divides the examples its epochs trained (``derived.examples_per_epoch``:
    ``metrics.examples_per_epoch``, 49,984 for augmented cifar10_cnn) by J/epoch, as the worker's telemetry does; the
    field's help said data.n_train (50,000), the value before examples_per_epoch was recorded."""
    rec = schema.Record.model_validate({"cell_id": "x", "stack": "pytorch", "suite": "classic", "task": "fit",
                                        "workload": "cifar10_cnn", "size": "full", "device": "gpu", "status": "ok",
                                        "data": {"n_train": 50000},
                                        "metrics": {"examples_per_epoch": 49984, "j_per_epoch": 1000.0,
                                                    "examples_per_j": None}})
    derived.rederive(rec)
    assert rec.metrics.examples_per_j == 49.984
    help_text = schema.Metrics.model_fields["examples_per_j"].description
    assert "examples_per_epoch" in help_text and "fit: data.n_train;" not in help_text

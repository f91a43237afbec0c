"""The Keras 3 benchmark's table: "Keras 3 best" over the Keras 3 stacks the source published, as its best is."""

from bench.core.atomic import write_json_atomic
from bench.core.stacks import STACKS
from bench.results import report
from bench.results.collect import collect
from bench.results.record import result_path
from tests.conftest import needs_collect
from tests.helpers.records import paper_record
from tests.helpers.tables import rows_starting

VERSION_STACK = "keras3-jax--keras-3.14.1--keras-hub-0.29.1"  # bench/core/derived_stacks.json: an older Keras


@needs_collect
def test_a_version_stack_has_its_own_column_and_never_wins_keras_3_best(tmp_path):
    """The version stack's 90 ms/step was bolded and taken as "Keras 3 best" (90.00 / 214.49): a Keras older than
    the pinned one, compared with the published best over the three pinned Keras 3 backends."""
    assert STACKS[VERSION_STACK].base == "keras3-jax" and STACKS[VERSION_STACK].reference is None
    recs = [paper_record("keras3-jax", "bert", "fit", 32, 100.0), paper_record("keras3-tf", "bert", "fit", 32, 120.0),
            paper_record(VERSION_STACK, "bert", "fit", 32, 90.0)]
    run = tmp_path / "run"
    for c, r in recs:
        write_json_atomic(result_path(run, c), r)
    collect(run, tmp_path / "run.csv")
    text = report.write_report(report.load_runs([tmp_path / "run.csv"])[0], tmp_path / "out").read_text()
    head = rows_starting(text, "model", "task", "batch")[0]  # Table 2 (the throughput table follows)
    row = dict(zip(head, rows_starting(text, "bert", "fit", "32")[0], strict=True))
    assert row[STACKS[VERSION_STACK].label] == "90.00 / NA"  # its own column, not bold
    assert row["Keras 3 JAX"].startswith("**100.00** / 222.37")  # the fastest of the published three
    assert row["Keras 3 best"] == "100.00 / 214.49"  # ours over the published three, beside theirs

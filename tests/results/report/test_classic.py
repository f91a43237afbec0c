"""The report's classic table: one line per cell, never a row picked from several."""

import pandas as pd

from bench.results.report.classic import classic_section
from bench.results.report.common import Footnotes
from tests.helpers.tables import rows_starting


def _row(stack, size, ms, loss=(2.0, 1.0)):
    return {"stack": stack, "suite": "classic", "workload": "mnist_mlp", "task": "fit", "size": size,
            "variant": "default", "status": "ok", "batch_size": 128,
            "data.source": "real" if size == "full" else "synthetic",
            "cell_id": f"{stack}__classic__mnist_mlp__fit__{size}__default", "metrics.ms_per_step_mean": ms,
            "history.loss": list(loss)}


def test_a_run_of_two_sizes_has_a_line_per_size_and_a_flag_stays_on_its_own_size():
    """A run holding mnist_mlp at smoke and full size (pytorch's smoke cell's loss did not fall): a line per size,
    named by it, the ⚠ on the smoke line only. The old table grouped by workload, variant and inputs: one line, each
    stack's first row of either size, and the smoke cell's ⚠ on the full cell too."""
    df = pd.DataFrame([_row("pytorch", "smoke", 5.0, loss=(2.0, 2.1)), _row("jax", "smoke", 6.0),
                       _row("pytorch", "full", 1.0), _row("jax", "full", 2.0)])
    text = "\n".join(classic_section(df, Footnotes()))
    assert rows_starting(text, "mnist_mlp (smoke)", "fit")[0][2:] == ["5.00 ⚠", "6.00"]
    assert rows_starting(text, "mnist_mlp (full)", "fit")[0][2:] == ["1.00", "2.00"]


def test_a_run_of_one_size_keeps_its_workload_names():
    df = pd.DataFrame([_row("pytorch", "smoke", 5.0), _row("jax", "smoke", 6.0)])
    assert rows_starting("\n".join(classic_section(df, Footnotes())), "mnist_mlp", "fit")[0][2:] == ["5.00", "6.00"]

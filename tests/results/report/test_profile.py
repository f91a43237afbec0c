"""The report's "Where the time goes" section and ``bench compare --profile`` (``bench.results.report.profile``)
from collected rows with profile blocks."""

from __future__ import annotations

import pandas as pd
import pytest

from bench.core.opcategories import IDLE, KEYS
from bench.results.report.profile import (
    compare_profiles,
    keras_adds,
    largest_difference,
    profile_frame,
    profile_plots,
    profile_section,
    shares,
)
from tests.helpers.tables import has_cells


def row(stack: str, busy: float, cats: dict[str, float], window_ms: float = 50.0, steps: int = 5, **more):
    """A collected row of an ok mnist_cnn cell with a profile (its categories in ms; the rest zero)."""
    out = {"stack": stack, "suite": "classic", "workload": "mnist_cnn", "task": "fit", "size": "smoke",
           "variant": "default", "device": "cpu", "status": "ok", "cell_id": f"{stack}__classic__mnist_cnn__fit__"
           "smoke__default", "profile.device_busy_fraction": busy, "profile.op_ms": sum(cats.values()),
           "profile.window_ms": window_ms, "profile.steps": steps}
    out.update({f"profile.categories.{k}": cats.get(k, 0.0) for k in KEYS})
    return {**out, **more}


@pytest.fixture
def df():
    return pd.DataFrame([
        row("pytorch", 0.9, {"matmul_conv": 30.0, "optimizer": 10.0, "elementwise": 5.0}, **{"metrics.sync": "epoch"}),
        row("keras3-torch", 0.5, {"matmul_conv": 30.0, "elementwise": 20.0}, window_ms=100.0,
            **{"settings.progress": "keras_tqdm", "settings.keras_async_batch_end": False, "metrics.sync": "epoch"}),
        row("jax", 0.8, {"matmul_conv": 40.0}),
        row("keras3-tf", 0.7, {"matmul_conv": 35.0}, status="failed"),  # not ok: left out
        {**row("keras3-jax", 0.7, {}), "profile.device_busy_fraction": None},  # no profile: left out
    ])


def test_a_rows_shares_sum_to_one_with_the_idle_part():
    s = shares(row("pytorch", 0.9, {"matmul_conv": 30.0, "optimizer": 10.0, "elementwise": 5.0}))
    assert sum(s.values()) == pytest.approx(1.0) and s[IDLE] == pytest.approx(0.1)
    assert s["matmul_conv"] == pytest.approx(0.9 * 30 / 45)
    assert shares({"stack": "jax"}) is None


def test_the_frame_keeps_ok_profiled_cells_and_the_section_names_the_largest_difference(df, tmp_path):
    frame = profile_frame(df)
    assert sorted(frame["stack"]) == ["jax", "keras3-torch", "pytorch"]
    lines = profile_section(frame, {"bars": "plots/x/where_the_time_goes.png"})
    text = "\n".join(lines)
    assert lines[0] == "## Where the time goes" and "### mnist_cnn fit" in text
    assert "optimizer update" in text and "normalisation" not in text  # no stack spent time in norms: no column
    # matmul: 80 % (jax) against 30 % (keras3-torch) spreads wider than idle's 50 % against 10 %
    assert "Largest difference: matmul / convolution, 80 % of the window on jax against 30 % on keras3-torch." in text
    assert profile_plots(frame, tmp_path) and (tmp_path / "where_the_time_goes.png").is_file()
    assert profile_section(profile_frame(df[df["stack"] == "keras3-tf"]), {}) == []


def test_the_keras_side_of_a_pair_is_said_to_add_what_it_spends_more_in(df):
    (_, g), = profile_frame(df).groupby("workload")
    sentence, = keras_adds(g)
    # keras3-torch: 20 ms/step a step, elementwise 0.5 * 20/50 of it = 4 ms; pytorch 10 ms/step, 0.9 * 5/45 = 1 ms
    assert sentence.startswith("keras3-torch against pytorch (20 vs 10 ms per profiled step): +9 ms/step idle (host)")
    assert "+3 ms/step elementwise and fused" in sentence and "optimizer" not in sentence
    # the classic default's notebook callback: Keras waits for every step, the twin reads once per epoch
    assert sentence.endswith("; step results read: sync=epoch / keras_tqdm, async off (Keras converts each step's "
                             "logs on the training thread: the host waits for every step).")
    assert largest_difference(g.head(1)).startswith("Only ")


def test_compare_shows_each_cell_both_runs_profiled_side_by_side(df):
    other = df.assign(**{"profile.device_busy_fraction": df["profile.device_busy_fraction"] / 2})
    pairs = compare_profiles(df, other)
    assert [cell.split()[0] for cell, _ in pairs] == ["pytorch", "keras3-torch", "jax"]
    table = dict(pairs)[next(c for c, _ in pairs if c.startswith("jax"))]
    idle = table[table["part"] == "idle (host)"].iloc[0]
    assert idle["A %"] == pytest.approx(20.0) and idle["B %"] == pytest.approx(60.0)
    assert idle["B - A ms/step"] == pytest.approx(4.0)  # 10 ms per step: 6 ms idle against 2
    assert list(table["part"]) == ["matmul / convolution", "idle (host)"]  # no time in the other parts
    assert compare_profiles(df, df.drop(columns=["profile.device_busy_fraction"])) == []


def test_the_section_shows_the_slowdown_and_why_a_profiled_step_runs_otherwise(df):
    df = df.assign(**{"profile.slowdown": [1.25, 2.0, 1.5, None, None], "profile.device": "cpu",
                      "profile.execution_differs": [None, None, "XLA runs its command buffers op by op", None, None]})
    text = "\n".join(profile_section(profile_frame(df), {}))
    assert has_cells(text, ["stack", "ms/step (profiled)", "slowdown"]) and has_cells(text, ["pytorch", "10", "1.25x"])
    assert "Profiled otherwise than timed on jax: XLA runs its command buffers op by op." in text


def test_profiles_that_count_different_devices_are_not_compared(df):
    mixed = df.assign(**{"profile.device": ["gpu", "cpu", "gpu", "gpu", "gpu"]})
    (_, g), = profile_frame(mixed).groupby("workload")
    assert largest_difference(g).startswith("The profiles count different devices (pytorch: gpu, keras3-torch: cpu")
    assert keras_adds(g) == []  # pytorch's kernels against keras3-torch's host ops: nothing to tell
    pairs = dict(compare_profiles(df.assign(**{"profile.device": "gpu"}), df.assign(**{"profile.device": "cpu"})))
    assert all(isinstance(v, str) and "different devices (A: gpu, B: cpu)" in v for v in pairs.values())


def test_the_profiled_ms_per_step_is_the_records_and_old_records_fall_back(df):
    """The table's ms/step is the one ``slowdown`` divides (``profile.ms_per_step``, wall time per step), not the
    trace's window per step; a record without the field shows the latter."""
    df = df.assign(**{"profile.ms_per_step": [12.5, None, None, None, None], "profile.slowdown": 1.25})
    text = "\n".join(profile_section(profile_frame(df), {}))
    assert has_cells(text, ["pytorch", "12.5", "1.25x"])  # not the window's 50 ms / 5 steps
    assert has_cells(text, ["keras3-torch", "20", "1.25x"])  # no recorded field: 100 ms / 5 steps

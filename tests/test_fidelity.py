import pytest

from bench.fidelity import measure
from tests.conftest import needs_torch


@needs_torch
def test_fidelity_compares_the_same_steps():
    r = measure("pytorch", "mnist_mlp", "cpu", "smoke", epochs=2)
    assert r["steps_per_epoch"] == 8 and r["batch_size"] == 128
    assert r["harness_ms_per_step"] > 0 and r["handloop_ms_per_step"] > 0
    assert r["ratio_mean"] == pytest.approx(r["harness_ms_per_step"] / r["handloop_ms_per_step"])
    # the check's ratio: fastest steady epoch on each side (the first epoch compiles and is left out)
    assert len(r["harness_epoch_s"]) == len(r["handloop_epoch_s"]) == 2
    assert r["ratio"] == pytest.approx(r["harness_epoch_s"][1] / r["handloop_epoch_s"][1])
    assert r["overhead_pct"] == pytest.approx(100 * (r["ratio"] - 1))


def test_fidelity_needs_two_epochs():
    with pytest.raises(ValueError, match="2 epochs"):
        measure("pytorch", "mnist_mlp", "cpu", "smoke", epochs=1)

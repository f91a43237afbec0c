"""Same architecture in every family: for each family x epoch-trained workload (rows from the registries), the
family's model has the workload's declared parameter count, the published one, and gives one logit per class for a
batch in the Keras layout. So Keras', PyTorch's (an LSTM's second bias counted once) and Flax's counts are equal,
and a new family or workload adds rows, not tests."""

import pytest

from bench.core.families import FAMILIES
from bench.models.engines import missing_model
from bench.models.workloads import get_workload
from tests.contract.grid import FIT_WORKLOADS, MODELS, family_rows, synthetic_batch


def test_every_family_has_a_model_row():
    assert set(MODELS) == set(FAMILIES)


@pytest.mark.framework
@pytest.mark.parametrize("family, name", family_rows(FIT_WORKLOADS))
def test_every_familys_model_has_the_published_parameter_count_and_one_logit_per_class(family, name, monkeypatch):
    """``bench list`` shows ``Workload.params``; every family's build has it (the record's ``params_total`` on Keras
    and JAX, ``params_effective`` on PyTorch). A workload without the family's model is recorded unsupported with
    the registry's reason instead."""
    monkeypatch.setenv("KERAS_BACKEND", "torch")  # before Keras' first import, if this row is it
    w = get_workload(name)
    if getattr(w, FAMILIES[family].builder) is None:
        assert f"Workload.{FAMILIES[family].builder}" in (missing_model(family, w) or "")
        return
    xs, meta = synthetic_batch(name, 3)
    params, shape = MODELS[family].count_and_forward(w, meta, xs)
    assert w.published is not None and params == w.published.params == w.params
    assert shape == (3, meta["num_classes"])

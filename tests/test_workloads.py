"""Same architecture on every stack: equal parameter counts, Keras and PyTorch, for every workload."""

import pytest

from bench import datasets
from bench.workloads import SUITES, WORKLOADS, get_workload
from tests.conftest import needs_keras_torch, needs_torch

#: Published parameter counts of the Keras examples (2017) and our reconstruction of the study's CNN.
PUBLISHED = {"mnist_mlp": 669_706, "cifar10_cnn": 1_250_858, "mnist_cnn": 563_018,
             "mnist_hierarchical_rnn": 199_434}


def meta(name):
    return datasets.SYNTHETIC[get_workload(name).dataset]["meta"]


def test_registry():
    assert SUITES["classic"] == ["mnist_mlp", "mnist_cnn", "mnist_hierarchical_rnn", "cifar10_cnn", "babi_rnn"]
    for name in SUITES["classic"]:
        w = WORKLOADS[name]
        assert w.tasks == ("fit",) and set(w.epochs) == {"smoke", "full"} and w.source
    with pytest.raises(KeyError, match="known"):
        get_workload("lenet")


def test_smoke_batch_keeps_float16_cells_cheap():
    """The tuning sweep's model at smoke size: a small batch (float16 convolutions are emulated on some
    CPUs at ~0.1 s per image), at least two steps per epoch so that step statistics exist; full size keeps
    the published batch. Every other classic workload keeps its published batch at smoke size."""
    cnn = get_workload("mnist_cnn")
    assert (cnn.batch_for("full"), cnn.batch_for("smoke")) == (256, 8)
    assert cnn.samples["smoke"] * cnn.epochs["smoke"] <= 64
    assert cnn.samples["smoke"] // cnn.batch_for("smoke") >= 2
    for name in SUITES["classic"]:
        w = WORKLOADS[name]
        assert w.batch_for("full") == w.batch_size
        assert w.batch_for("smoke") == (w.smoke_batch_size or w.batch_size)


@needs_torch
@pytest.mark.parametrize("name", SUITES["classic"])
def test_torch_forward_shapes(name):
    import torch

    w = get_workload(name)
    ds = datasets.synthetic(w.dataset, 3, 2, "test")
    ds = w.prepare(ds) if w.prepare else ds
    from bench.engines.torch_engine import to_tensors

    model = w.build_torch(ds.meta)
    out = model(*to_tensors(torch, ds.x_train, w.torch_layout, torch.device("cpu")))
    assert tuple(out.shape) == (3, ds.meta["num_classes"])


@needs_keras_torch
@pytest.mark.parametrize("name", SUITES["classic"])
def test_equal_parameter_counts_keras_and_torch(name, monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    import keras

    from bench.engines.torch_engine import effective_param_count

    w = get_workload(name)
    keras_params = w.build_keras(keras, meta(name)).count_params()
    torch_params = effective_param_count(w.build_torch(meta(name)))
    assert keras_params == torch_params
    if name in PUBLISHED:
        assert keras_params == PUBLISHED[name]


@needs_torch
def test_lstm_second_bias_is_the_only_difference():
    from bench.engines.torch_engine import effective_param_count

    model = get_workload("mnist_hierarchical_rnn").build_torch({"num_classes": 10})
    raw = sum(p.numel() for p in model.parameters())
    assert raw - effective_param_count(model) == 2 * 4 * 128

"""The tuning study's input pipelines as its post states them (``bench.core.reference.tuning_study``): tf.data
shuffled with a width of 20,000, its batching's parallel calls and its prefetch buffer both AUTOTUNE, on the Keras
stacks and on the plain-JAX stack's pipeline of the same name; PyTorch's tensor datasets through a loader with the
standard parameters and no workers. Each test reads the values the code passes, through a stand-in for
TensorFlow (no TensorFlow needed) or the real ``DataLoader``."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from bench.core.families.jax import JaxEpochSettings
from bench.core.families.torch import TorchEpochSettings
from bench.core.reference import tuning_study
from bench.models.datasets import Dataset
from bench.models.workloads import get_workload
from bench.run import sweep
from tests.conftest import needs_torch

AUTOTUNE = -1  # tf.data.AUTOTUNE's value; any sentinel would do


class FakeDataset:
    """The tf.data calls the pipelines make, with TensorFlow's own parameter names (tensorflow 2.21
    ``tf.data.Dataset``), each recorded as (call, {parameter: value})."""

    def __init__(self, calls: list):
        self.calls = calls

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None):
        self.calls.append(("shuffle", {"buffer_size": buffer_size, "seed": seed,
                                       "reshuffle_each_iteration": reshuffle_each_iteration}))
        return self

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None, name=None):
        self.calls.append(("batch", {"batch_size": batch_size, "drop_remainder": drop_remainder,
                                     "num_parallel_calls": num_parallel_calls}))
        return self

    def prefetch(self, buffer_size, name=None):
        self.calls.append(("prefetch", {"buffer_size": buffer_size}))
        return self

    def as_numpy_iterator(self):
        return iter(())


def fake_tensorflow(calls: list) -> types.ModuleType:
    tf = types.ModuleType("tensorflow")
    sources: dict = {}

    def from_tensor_slices(arrays):
        sources["arrays"] = arrays
        calls.append(("from_tensor_slices", {}))
        return FakeDataset(calls)

    tf.data = types.SimpleNamespace(AUTOTUNE=AUTOTUNE, Dataset=types.SimpleNamespace(
        from_tensor_slices=from_tensor_slices))
    tf.constant = np.asarray
    return tf


def mnist_like(n: int) -> Dataset:
    return Dataset("mnist", (np.zeros((n, 28, 28, 1), np.float32),), np.zeros(n, np.int32),
                   (np.zeros((2, 28, 28, 1), np.float32),), np.zeros(2, np.int32), {"num_classes": 10})


def expected_calls(n: int, batch: int, seed=None) -> list:
    """The post's pipeline: a shuffle of width 20,000 (capped at the ``n`` examples there are), then the calls it
    set to AUTOTUNE (``TF_DATA_AUTOTUNED``)."""
    auto = dict(tuning_study.TF_DATA_AUTOTUNED)
    assert auto == {"batch": "num_parallel_calls", "prefetch": "buffer_size"}
    return [("from_tensor_slices", {}),
            ("shuffle", {"buffer_size": min(tuning_study.TF_DATA_SHUFFLE_BUFFER, n), "seed": seed,
                         "reshuffle_each_iteration": True}),
            ("batch", {"batch_size": batch, "drop_remainder": False, auto["batch"]: AUTOTUNE}),
            ("prefetch", {auto["prefetch"]: AUTOTUNE})]


def test_the_posts_stated_values():
    """The post: shuffle width 20,000 for every tf.data run; both tf.data parameters it could set, AUTOTUNE;
    tensor datasets through a loader with no workers."""
    assert tuning_study.TF_DATA_SHUFFLE_BUFFER == 20_000
    assert tuning_study.TENSOR_DATASET_NUM_WORKERS == 0


@pytest.mark.parametrize("pipeline", ["tf_data_numpy", "tf_data_tensors"])
@pytest.mark.parametrize("n", [60_000, 32])  # full size, and smoke data smaller than the buffer
def test_keras_tf_data_pipelines_are_the_posts(monkeypatch, pipeline, n):
    from bench.models.engines.keras.data import shuffle_buffer, train_data

    calls: list = []
    monkeypatch.setitem(sys.modules, "tensorflow", fake_tensorflow(calls))
    train_data(types.SimpleNamespace(), pipeline, mnist_like(n), 256)
    assert calls == expected_calls(n, 256)
    assert shuffle_buffer(pipeline, n) == min(20_000, n)


@pytest.mark.parametrize("n", [60_000, 32])
def test_plain_jax_tf_data_pipeline_is_the_keras_stacks_and_records_its_buffer(monkeypatch, n):
    """The plain-JAX stack's ``tf_data_numpy`` (beyond the study) is the Keras stacks' pipeline of that name, so the
    tuning grid's tf.data rows compare one pipeline across stacks. The old code shuffled over the whole set and
    batched without parallel calls, and recorded the whole set as the buffer."""
    from bench.models.engines.jax import epochs as jax_epochs

    calls: list = []
    monkeypatch.setitem(sys.modules, "tensorflow", fake_tensorflow(calls))
    effective: dict = {}
    jax_epochs._train_data(None, JaxEpochSettings(data_pipeline="tf_data_numpy"), False, mnist_like(n),
                        get_workload("mnist_cnn_tuning"), 256, 1, None, effective)
    assert calls == expected_calls(n, 256, seed=0)
    assert effective["shuffle_buffer"] == min(20_000, n)
    effective.clear()
    jax_epochs._train_data(None, JaxEpochSettings(data_pipeline="numpy_batches"), False, mnist_like(n),
                        get_workload("mnist_cnn_tuning"), 256, 1, None, effective)
    assert effective["shuffle_buffer"] == n  # a whole-set permutation each epoch


def test_plain_jax_tf_data_draws_from_the_studys_buffer_with_real_tensorflow():
    """With TensorFlow itself: element i of an epoch comes from the first 20,000 + i examples (a whole-set shuffle
    would draw from all 25,000 at once)."""
    pytest.importorskip("keras")  # first: TensorFlow 2.21 imported before Keras' torch backend crashes in triton
    pytest.importorskip("tensorflow")
    from bench.models.engines.jax.data import tf_data_epochs

    n = 25_000
    epoch = tf_data_epochs((np.arange(n, dtype=np.float32)[:, None],), np.zeros(n, np.int32), 1)
    first = []
    for (x,), _ in epoch():
        first.append(int(x[0, 0]))
        if len(first) == 300:
            break
    assert all(v < 20_000 + i for i, v in enumerate(first)) and len(set(first)) == 300


@needs_torch
def test_tuning_tensor_dataset_rows_run_a_standard_loader_with_no_workers():
    """Every ``tensor_dataset`` row of the default tuning grid on PyTorch runs a ``DataLoader`` whose options are
    the standard ones but for the shuffle (the study's "shuffling on") and its seeded generator, with
    ``num_workers`` 0, as the post ran its tensor datasets."""
    import torch

    from bench.models.engines.torch.data import loader_kwargs

    rows = [v.settings for v in sweep.default_grid("tuning").variants("pytorch")
            if v.settings.get("data_pipeline") == "tensor_dataset"]
    assert rows
    data = torch.utils.data.TensorDataset(torch.zeros(8, 1))
    standard = torch.utils.data.DataLoader(data)
    options = ("num_workers", "pin_memory", "persistent_workers", "drop_last", "timeout", "prefetch_factor",
               "multiprocessing_context", "in_order")
    for row in rows:
        s = TorchEpochSettings.from_dict(row)
        assert s.num_workers == tuning_study.TENSOR_DATASET_NUM_WORKERS, row
        kw = loader_kwargs(torch, 256, s.num_workers, torch.device("cpu"), s.pin_memory, s.persistent_workers)
        assert set(kw) == {"batch_size", "shuffle", "num_workers", "persistent_workers", "pin_memory", "generator"}
        loader = torch.utils.data.DataLoader(data, **kw)
        assert {o: getattr(loader, o) for o in options} == {o: getattr(standard, o) for o in options}, row
        assert isinstance(loader.sampler, torch.utils.data.RandomSampler)

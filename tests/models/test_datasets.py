"""The loaders read the real file formats: each test writes a small file in that format."""

import pickle
import tarfile

import numpy as np
import pytest

from bench.models import datasets
from tests.helpers.datasets import BABI, add_member, write_babi, write_cifar, write_mnist


def test_mnist_npz(tmp_path):
    write_mnist(tmp_path / "mnist.npz")
    ds = datasets.load("mnist", cache_dir=tmp_path, offline=True)
    assert ds.source == "real" and ds.sha256 == datasets.sha256_of(tmp_path / "mnist.npz")
    assert ds.x_train[0].shape == (12, 28, 28, 1) and ds.x_train[0].dtype == np.float32
    assert ds.x_train[0].min() >= 0.0 and ds.x_train[0].max() <= 1.0
    assert ds.y_val.dtype == np.int32 and ds.y_val.shape == (4,)


def test_cifar_python_tar(tmp_path):
    write_cifar(tmp_path / "cifar-10-python.tar.gz")
    ds = datasets.load("cifar10", cache_dir=tmp_path, offline=True)
    assert ds.source == "real"
    assert ds.x_train[0].shape == (15, 32, 32, 3) and ds.x_val[0].shape == (3, 32, 32, 3)


def test_cifar_channel_order(tmp_path):
    """CIFAR rows are 1024 red, then green, then blue values: (N, 3, 32, 32) -> NHWC."""
    data = np.zeros((1, 3072), dtype=np.uint8)
    data[0, 1024:2048] = 255  # green plane
    with tarfile.open(tmp_path / "c.tar.gz", "w:gz") as tar:
        for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
            add_member(tar, f"cifar-10-batches-py/{name}", pickle.dumps({b"data": data, b"labels": [3]}))
    ds = datasets.read_cifar10_tar(tmp_path / "c.tar.gz")
    assert ds.x_train[0][0, 5, 7].tolist() == [0.0, 1.0, 0.0]


def test_babi_parse_and_vectorize(tmp_path):
    write_babi(tmp_path / "babi_tasks_1-20_v1-2.tar.gz")
    ds = datasets.load("babi", cache_dir=tmp_path, offline=True)
    story, question = ds.x_train
    assert story.shape == (3, 19) and question.shape == (3, 4)  # 6 + 6 + 7 tokens
    assert ds.meta["story_maxlen"] == 19 and ds.meta["query_maxlen"] == 4
    # the second question's story holds both earlier statements of its story
    parsed = datasets.parse_babi(BABI.splitlines())
    assert parsed[1][0][:6] == ["Mary", "moved", "to", "the", "bathroom", "."]
    assert parsed[2][0] == ["Sandra", "journeyed", "to", "the", "office", "."]
    assert parsed[2][2] == "office"
    assert (story[2][:13] == 0).all() and (story[2][13:] > 0).all()  # pre-padded


@pytest.mark.parametrize("name", ["mnist", "cifar10", "babi"])
def test_offline_falls_back_to_synthetic_with_identical_shapes(tmp_path, name):
    ds = datasets.load(name, n_train=16, n_val=4, cache_dir=tmp_path, offline=True)
    assert ds.source == "synthetic" and "not cached" in ds.reason
    spec = datasets.SYNTHETIC[name]
    for x, (shape, dtype) in zip(ds.x_train, spec["inputs"], strict=True):
        assert x.shape == (16, *shape) and x.dtype == np.dtype(dtype)
    assert ds.y_train.shape == (16,) and ds.y_val.shape == (4,)
    assert ds.y_train.max() < ds.meta["num_classes"]


def test_failed_download_falls_back(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise ConnectionError("proxy refused")

    monkeypatch.setattr(datasets, "fetch", boom)
    ds = datasets.load("mnist", n_train=2, n_val=2, cache_dir=tmp_path, offline=False)
    assert ds.source == "synthetic" and "proxy refused" in ds.reason


def test_unknown_dataset():
    with pytest.raises(KeyError):
        datasets.load("imagenet")


def test_data_policy_auto_falls_back_only_at_smoke_size(tmp_path, monkeypatch):
    """--data auto: synthetic only at smoke size; a full-size cell needs the real data."""
    from bench.models.datasets import DataUnavailable
    from bench.models.workloads import get_workload

    monkeypatch.setenv("BENCH_DATA_DIR", str(tmp_path))  # empty cache, and BENCH_OFFLINE=1 (conftest)
    w = get_workload("mnist_mlp")
    smoke = w.load_data("smoke")
    assert smoke.source == "synthetic" and "offline" in smoke.reason
    with pytest.raises(DataUnavailable, match="required.*--data synthetic"):
        w.load_data("full")
    with pytest.raises(DataUnavailable):
        w.load_data("smoke", "real")
    asked = w.load_data("full", "synthetic")
    assert asked.source == "synthetic" and asked.reason == "asked for (--data synthetic)" and asked.n_train == 60000
    assert w.load_data("full", "fallback").source == "synthetic"  # the fidelity check's policy


def test_data_policy_reads_the_real_file_when_it_is_there(tmp_path, monkeypatch):
    import numpy as np

    from bench.models.workloads import get_workload

    rng = np.random.default_rng(0)
    np.savez(tmp_path / "mnist.npz", x_train=rng.integers(0, 255, (100, 28, 28), dtype=np.uint8),
             y_train=rng.integers(0, 10, 100, dtype=np.uint8),
             x_test=rng.integers(0, 255, (20, 28, 28), dtype=np.uint8), y_test=rng.integers(0, 10, 20, dtype=np.uint8))
    monkeypatch.setenv("BENCH_DATA_DIR", str(tmp_path))
    for data in ("auto", "real"):
        ds = get_workload("mnist_mlp").load_data("full", data)
        assert ds.source == "real" and ds.sha256

"""Small files in the real formats of the datasets the loaders read (MNIST's npz, CIFAR-10's python tarball, the
bAbI tasks archive), written with random content."""

import io
import pickle
import tarfile

import numpy as np

from bench.models import datasets


def write_mnist(path, n_train=12, n_test=4):
    """mnist.npz as Keras serves it: uint8 images (N, 28, 28) and labels, random."""
    rng = np.random.default_rng(1)
    np.savez(path, x_train=rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
             y_train=rng.integers(0, 10, n_train, dtype=np.uint8),
             x_test=rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
             y_test=rng.integers(0, 10, n_test, dtype=np.uint8))


def add_member(tar, name, data: bytes):
    """Add ``data`` to the open tar file ``tar`` as the member ``name``."""
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def write_cifar(path, per_batch=3):
    """cifar-10-python.tar.gz: five data batches and the test batch, ``per_batch`` random images each."""
    rng = np.random.default_rng(2)
    with tarfile.open(path, "w:gz") as tar:
        for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
            batch = {b"data": rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8),
                     b"labels": list(rng.integers(0, 10, per_batch).tolist())}
            add_member(tar, f"cifar-10-batches-py/{name}", pickle.dumps(batch))


BABI = """1 Mary moved to the bathroom.
2 John went to the hallway.
3 Where is Mary?\tbathroom\t1
4 Daniel went back to the hallway.
5 Where is Daniel?\thallway\t4
1 Sandra journeyed to the office.
2 Where is Sandra?\toffice\t1
"""


def write_babi(path):
    """The bAbI tasks archive holding qa2's 1k train and test files, both ``BABI``."""
    with tarfile.open(path, "w:gz") as tar:
        for split in ("train", "test"):
            add_member(tar, datasets.BABI_CHALLENGE.format(split), BABI.encode())

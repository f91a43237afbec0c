"""The real datasets of the classic suite, their file formats, and a synthetic stand-in.

Each dataset is fetched once into a cache directory (``BENCH_DATA_DIR``, a named volume in compose)
with pooch, checked against its published SHA-256 where one is published. When it cannot be fetched
(offline, proxy, hash mismatch) a synthetic dataset of identical per-example shapes and dtypes is
used, and the record says ``data.source = synthetic`` with the reason.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import numpy as np


@dataclass(frozen=True)
class Remote:
    """Where a dataset file comes from. sha256 None: none is published; the record keeps ours."""

    url: str
    filename: str
    sha256: str | None


REMOTES = {
    # Hashes as published by keras.datasets.
    "mnist": Remote("https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz", "mnist.npz",
                    "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"),
    "cifar10": Remote("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz", "cifar-10-python.tar.gz",
                      "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"),
    "babi": Remote("https://s3.amazonaws.com/text-datasets/babi_tasks_1-20_v1-2.tar.gz",
                   "babi_tasks_1-20_v1-2.tar.gz", None),
}

#: The bAbI task of the 2017 Keras example babi_rnn.py (1k examples).
BABI_CHALLENGE = "tasks_1-20_v1-2/en/qa2_two-supporting-facts_{}.txt"


@dataclass
class Dataset:
    """Arrays ready for training.

    Attributes:
        x_train / x_val: tuples of input arrays (one per model input), first axis = examples.
        y_train / y_val: integer class labels, shape (N,), int32.
        meta: shape facts the model builders need (e.g. ``num_classes``, ``vocab_size``).
        source: ``real`` or ``synthetic``; reason: why synthetic; sha256: of the file read.
    """

    name: str
    x_train: tuple[np.ndarray, ...]
    y_train: np.ndarray
    x_val: tuple[np.ndarray, ...]
    y_val: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)
    source: str = "real"
    reason: str | None = None
    sha256: str | None = None

    @property
    def n_train(self) -> int:
        return int(self.y_train.shape[0])

    def subset(self, n_train: int | None, n_val: int | None) -> Dataset:
        """The first ``n_train`` / ``n_val`` examples (None keeps all)."""
        return Dataset(self.name, tuple(x[:n_train] for x in self.x_train), self.y_train[:n_train],
                       tuple(x[:n_val] for x in self.x_val), self.y_val[:n_val], dict(self.meta),
                       self.source, self.reason, self.sha256)

    def record(self) -> dict[str, Any]:
        """The ``data`` block of a result record."""
        return {"name": self.name, "source": self.source, "reason": self.reason, "sha256": self.sha256,
                "n_train": self.n_train, "n_val": int(self.y_val.shape[0])}


# ---- readers of the real file formats -------------------------------------------------------------

def read_mnist_npz(path: Path) -> Dataset:
    """Read Keras' ``mnist.npz`` (x_train uint8 (60000, 28, 28), y_train, x_test, y_test).

    Images become float32 in [0, 1] with a channel axis: (N, 28, 28, 1).
    """
    with np.load(path, allow_pickle=False) as f:
        xs = {k: f[k] for k in ("x_train", "y_train", "x_test", "y_test")}
    prep = lambda x: (x.astype(np.float32) / 255.0)[..., None]  # noqa: E731
    return Dataset("mnist", (prep(xs["x_train"]),), xs["y_train"].astype(np.int32),
                   (prep(xs["x_test"]),), xs["y_test"].astype(np.int32), {"num_classes": 10})


def _cifar_batch(tar: tarfile.TarFile, member: str) -> tuple[np.ndarray, np.ndarray]:
    f = tar.extractfile(member)
    if f is None:
        raise ValueError(f"{member} missing from archive")
    # The official CIFAR-10 "python version" is a pickle; the archive's hash is checked before this.
    d = pickle.load(f, encoding="bytes")  # noqa: S301
    x = np.asarray(d[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return x, np.asarray(d[b"labels"], dtype=np.int32)


def read_cifar10_tar(path: Path) -> Dataset:
    """Read ``cifar-10-python.tar.gz``: data_batch_1..5 and test_batch, images (N, 32, 32, 3) in [0, 1]."""
    with tarfile.open(path, "r:gz") as tar:
        train = [_cifar_batch(tar, f"cifar-10-batches-py/data_batch_{i}") for i in range(1, 6)]
        x_test, y_test = _cifar_batch(tar, "cifar-10-batches-py/test_batch")
    x_train = np.concatenate([b[0] for b in train])
    y_train = np.concatenate([b[1] for b in train])
    f32 = lambda x: x.astype(np.float32) / 255.0  # noqa: E731
    return Dataset("cifar10", (f32(x_train),), y_train, (f32(x_test),), y_test, {"num_classes": 10})


_TOKEN = re.compile(r"\w+|[^\w\s]")


def parse_babi(lines: list[str]) -> list[tuple[list[str], list[str], str]]:
    """Parse bAbI task lines into (story tokens, question tokens, answer) triples.

    A line is ``ID text`` or, for a question, ``ID question<TAB>answer<TAB>supporting ids``; ID 1
    starts a new story. The story of a question is every statement before it (as in babi_rnn.py).
    """
    out: list[tuple[list[str], list[str], str]] = []
    story: list[list[str]] = []  # the story's sentences, each a list of tokens
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        nid, _, text = line.partition(" ")
        if int(nid) == 1:
            story = []
        if "\t" in text:
            q, answer, _ = text.split("\t")
            out.append(([t for s in story for t in s], _TOKEN.findall(q), answer))
        else:
            story.append(_TOKEN.findall(text))
    return out


def vectorize_babi(train, test) -> Dataset:
    """Token ids (0 = padding, pre-padded like Keras' pad_sequences) and answer ids."""
    vocab = sorted({w for s, q, a in train + test for w in (*s, *q, a)})
    idx = {w: i + 1 for i, w in enumerate(vocab)}
    story_len = max(len(s) for s, _, _ in train + test)
    query_len = max(len(q) for _, q, _ in train + test)

    def pad(seqs, n):
        arr = np.zeros((len(seqs), n), dtype=np.int32)
        for i, s in enumerate(seqs):
            ids = [idx[w] for w in s][-n:]
            arr[i, n - len(ids):] = ids
        return arr

    def arrays(data):
        return ((pad([s for s, _, _ in data], story_len), pad([q for _, q, _ in data], query_len)),
                np.array([idx[a] for _, _, a in data], dtype=np.int32))

    (xs, ys), (xv, yv) = arrays(train), arrays(test)
    meta = {"num_classes": len(vocab) + 1, "vocab_size": len(vocab) + 1,
            "story_maxlen": story_len, "query_maxlen": query_len}
    return Dataset("babi", xs, ys, xv, yv, meta)


def read_babi_tar(path: Path, challenge: str = BABI_CHALLENGE) -> Dataset:
    """Read one bAbI task (default: qa2, 1k examples) from ``babi_tasks_1-20_v1-2.tar.gz``."""
    with tarfile.open(path, "r:gz") as tar:
        splits = []
        for split in ("train", "test"):
            f = tar.extractfile(challenge.format(split))
            if f is None:
                raise ValueError(f"{challenge.format(split)} missing from archive")
            splits.append(parse_babi(io.TextIOWrapper(f, encoding="utf-8").readlines()))
    return vectorize_babi(*splits)


READERS = {"mnist": read_mnist_npz, "cifar10": read_cifar10_tar, "babi": read_babi_tar}

# ---- synthetic stand-ins ----------------------------------------------------------------------------

#: Per-example shapes of the real data, and example counts (train, test).
class SyntheticSpec(TypedDict):
    """A dataset's shapes for ``synthetic``: each input's (per-example shape, dtype), (n_train, n_val), meta."""

    inputs: list[tuple[tuple[int, ...], str]]
    n: tuple[int, int]
    meta: dict[str, int]


SYNTHETIC: dict[str, SyntheticSpec] = {
    "mnist": {"inputs": [((28, 28, 1), "float32")], "n": (60000, 10000), "meta": {"num_classes": 10}},
    "cifar10": {"inputs": [((32, 32, 3), "float32")], "n": (50000, 10000), "meta": {"num_classes": 10}},
    # qa2 (1k) as vectorised by babi_rnn.py: vocabulary 35 words + padding.
    "babi": {"inputs": [((552,), "int32"), ((5,), "int32")], "n": (1000, 1000),
             "meta": {"num_classes": 36, "vocab_size": 36, "story_maxlen": 552, "query_maxlen": 5}},
}


def example_counts(name: str) -> tuple[int, int]:
    """The real dataset ``name``'s example counts (training, test), as ``SYNTHETIC`` holds them (the one place).

    Raises:
        KeyError: an unknown dataset.
    """
    return SYNTHETIC[name]["n"]


def synthetic(name: str, n_train: int | None, n_val: int | None, reason: str, seed: int = 0) -> Dataset:
    """Random data with the real dataset's shapes and dtypes (only the requested number of examples).

    Labels are uniform over the classes. Token inputs are uniform ids; image inputs are uniform noise in [0, 0.5)
    plus half their class's own colour (one random value per class and channel, in [0, 1)): the labels can be
    learnt from the pixels, also through shifts and flips (cifar10_cnn's augmentation), so a smoke run's loss
    falls as the correctness gate expects (``bench.results.report.method.correctness_flags``). Values stay in [0, 1).
    """
    spec = SYNTHETIC[name]
    meta = dict(spec["meta"])
    rng = np.random.default_rng(seed)
    n_tr = spec["n"][0] if n_train is None else min(n_train, spec["n"][0])
    n_va = spec["n"][1] if n_val is None else min(n_val, spec["n"][1])
    colours = {i: rng.random((meta["num_classes"], shape[-1]), dtype=np.float32)
               for i, (shape, dtype) in enumerate(spec["inputs"]) if dtype != "int32"}

    def inputs(labels: np.ndarray) -> tuple[np.ndarray, ...]:
        out = []
        for i, (shape, dtype) in enumerate(spec["inputs"]):
            n = labels.shape[0]
            if dtype == "int32":
                out.append(rng.integers(1, meta["vocab_size"], size=(n, *shape), dtype=np.int32))
            else:
                colour = colours[i][labels].reshape(n, *([1] * (len(shape) - 1)), shape[-1])
                out.append(0.5 * rng.random((n, *shape), dtype=np.float32) + 0.5 * colour)
        return tuple(out)

    y_train = rng.integers(0, meta["num_classes"], size=n_tr, dtype=np.int32)
    y_val = rng.integers(0, meta["num_classes"], size=n_va, dtype=np.int32)
    return Dataset(name, inputs(y_train), y_train, inputs(y_val), y_val, meta, source="synthetic", reason=reason)


# ---- fetching -------------------------------------------------------------------------------------

def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(name: str, cache_dir: Path, timeout_s: float = 30.0) -> Path:
    """Return the local path of dataset ``name``'s file, downloading it into ``cache_dir`` if needed.

    Raises:
        Exception: whatever the download raises (network, hash mismatch); callers fall back.
    """
    import pooch

    remote = REMOTES[name]
    known = f"sha256:{remote.sha256}" if remote.sha256 else None
    local = Path(cache_dir) / remote.filename
    if local.exists() and remote.sha256 is None:
        return local
    downloader = pooch.HTTPDownloader(timeout=timeout_s, progressbar=False)
    return Path(pooch.retrieve(remote.url, known, fname=remote.filename, path=cache_dir,
                               downloader=downloader))


#: Where a cell's data may come from (``bench run --data``). ``auto``: the real dataset, falling back to the
#: synthetic stand-in only at ``smoke`` size (a full-size run on synthetic data does not measure the
#: published task, so it fails instead); ``real``: the real dataset or a failed cell; ``synthetic``: the
#: stand-in, as asked.
DATA_CHOICES = ("auto", "real", "synthetic")


class DataUnavailable(RuntimeError):
    """The real dataset was required (``--data real``, or ``auto`` at full size) and could not be read."""


def load(name: str, n_train: int | None = None, n_val: int | None = None,
         cache_dir: Path | None = None, offline: bool | None = None, source: str = "fallback") -> Dataset:
    """Load dataset ``name`` (``mnist``, ``cifar10``, ``babi``).

    Args:
        n_train / n_val: keep only the first examples (None: all).
        cache_dir: download cache (default ``$BENCH_DATA_DIR`` or ``~/.cache/dlbench``).
        offline: skip downloading (default ``$BENCH_OFFLINE == "1"``); a cached file is still used.
        source: ``fallback`` (real if possible, else synthetic with the reason), ``real`` (real or
            ``DataUnavailable``) or ``synthetic`` (the stand-in, reason "asked").

    Raises:
        KeyError: unknown dataset name. ValueError: unknown ``source``. DataUnavailable: ``source="real"``
        and the file could not be fetched or read (the message says why).
    """
    if name not in READERS:
        raise KeyError(f"unknown dataset {name!r}")
    if source not in ("fallback", "real", "synthetic"):
        raise ValueError(f"unknown data source {source!r}")
    if source == "synthetic":
        return synthetic(name, n_train, n_val, "asked for (--data synthetic)")
    cache = Path(cache_dir or os.environ.get("BENCH_DATA_DIR") or Path.home() / ".cache" / "dlbench")
    if offline is None:
        offline = os.environ.get("BENCH_OFFLINE") == "1"
    local = cache / REMOTES[name].filename
    try:
        if offline and not local.exists():
            raise FileNotFoundError(f"offline and {local} is not cached")
        path = local if offline else fetch(name, cache)
        ds = READERS[name](path)
        ds.sha256 = sha256_of(path)
        return ds.subset(n_train, n_val)
    except Exception as e:  # any failure to get the real data falls back, and says why
        reason = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        if source == "real":
            raise DataUnavailable(f"the real {name} dataset is required and could not be read ({reason}); "
                                  f"put {REMOTES[name].filename} in {cache} or run with --data synthetic") from e
        return synthetic(name, n_train, n_val, reason)

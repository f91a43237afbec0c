"""The plain-JAX loop's data pipelines (NumPy batches, the set placed on the device once, tf.data read as NumPy),
where each makes its batches, and the source's real-time augmentation (NumPy, on background threads).
"""

from __future__ import annotations

import math
import queue
import threading
from collections.abc import Iterator

import numpy as np

from bench.models.engines import tfdata
from bench.models.workloads.training import Augmentation

#: Where each data pipeline makes the training batches (``settings.train_data_placement``).
PLACEMENT = {"numpy_batches": "host (NumPy: a shuffled index per step, the batch moved by the step's call)",
             "device_put_once": "device (jax.device_put of the whole set once; a shuffled index per step)",
             "tf_data_numpy": "host (tf.data on the CPU, read as NumPy batches)",
             "host_augmentation": "host (one background thread: per-image NumPy shifts and flips, batches queued)"}


def augment_images(rng: np.random.Generator, images: np.ndarray, aug: Augmentation) -> np.ndarray:
    """``aug`` done to each image of ``images`` (B, H, W, C), as ImageDataGenerator.random_transform did
    (keras/preprocessing/image.py@2.0.8:555-612): a shift of ``round(uniform(-r, r) * size)`` pixels per axis (order-0
    resampling moves whole pixels), the pixels shifted in repeating the edge (``fill_mode='nearest'``), then a
    left-right flip with probability 0.5. Returns a new array of the same shape and dtype.

    Raises:
        ValueError: a fill mode or interpolation other than ``nearest``.
    """
    if (aug.fill_mode, aug.interpolation) != ("nearest", "nearest"):
        raise ValueError("the JAX augmentation implements fill_mode and interpolation 'nearest' only")
    b, h, w = images.shape[:3]
    pad = math.ceil(max(aug.height_shift_range * h, aug.width_shift_range * w))
    padded = np.pad(images, ((0, 0), (pad, pad), (pad, pad), (0, 0)), mode="edge")
    dy = np.rint(rng.uniform(-aug.height_shift_range, aug.height_shift_range, b) * h).astype(int)
    dx = np.rint(rng.uniform(-aug.width_shift_range, aug.width_shift_range, b) * w).astype(int)
    out = np.empty_like(images)
    for i in range(b):
        out[i] = padded[i, pad + dy[i]:pad + dy[i] + h, pad + dx[i]:pad + dx[i] + w]
    if aug.horizontal_flip:
        flip = rng.random(b) < 0.5
        out[flip] = out[flip, :, ::-1]
    return out


class AugmentedBatches:
    """Augmented training batches made on the host by ``aug.workers`` background thread(s), as Keras 2.0.8's
    ``fit_generator(datagen.flow(...), workers=1)`` made them (a thread there too, keras/engine/training.py@2.0.8:
    1839-1841, ``GeneratorEnqueuer`` without multiprocessing): shuffled each epoch, ``n // batch`` full batches an
    epoch, up to ``aug.max_queue_size`` batches queued ahead of the training loop, across epoch edges.
    ``epoch()`` yields one epoch's ``((images,), labels)``; ``close()`` stops the threads.
    """

    def __init__(self, aug: Augmentation, images: np.ndarray, labels: np.ndarray, batch_size: int, epochs: int):
        self.aug, self.images, self.labels, self.batch = aug, images, labels, batch_size
        self.steps = len(labels) // batch_size if aug.drop_remainder else math.ceil(len(labels) / batch_size)
        self.queue: queue.Queue = queue.Queue(maxsize=aug.max_queue_size)
        self.stop = threading.Event()
        self.rng = np.random.default_rng(0)
        self.orders = [self.rng.permutation(len(labels)) for _ in range(epochs)]
        self.lock = threading.Lock()
        self.next = 0  # the next (epoch, step) to make, as one counter
        self.threads = [threading.Thread(target=self._produce, args=(w,), daemon=True) for w in range(aug.workers)]
        for t in self.threads:
            t.start()

    def _produce(self, worker: int) -> None:
        rng = np.random.default_rng(1 + worker)
        while not self.stop.is_set():
            with self.lock:
                k = self.next
                self.next += 1
            epoch, step = divmod(k, self.steps)
            if epoch >= len(self.orders):
                return
            idx = self.orders[epoch][step * self.batch:(step + 1) * self.batch]
            item = ((augment_images(rng, self.images[idx], self.aug),), self.labels[idx])
            while not self.stop.is_set():
                try:
                    self.queue.put(item, timeout=0.1)
                    break
                except queue.Full:
                    continue

    def epoch(self) -> Iterator[tuple[tuple[np.ndarray, ...], np.ndarray]]:
        """One epoch's batches, in the order they were made (one worker: the epoch's shuffled order)."""
        for _ in range(self.steps):
            yield self.queue.get()

    def close(self) -> None:
        """Stop the producer threads."""
        self.stop.set()
        for t in self.threads:
            t.join(timeout=5)


def numpy_epochs(xs: tuple[np.ndarray, ...], y: np.ndarray, batch_size: int, seed: int = 0):
    """``numpy_batches``: an epoch-iterable of ``(inputs, labels)`` NumPy batches, a fresh permutation each epoch
    (the last batch may be partial, as in Keras' fit and the PyTorch loop)."""
    rng = np.random.default_rng(seed)
    n = len(y)

    def epoch():
        order = rng.permutation(n)
        for i in range(0, n, batch_size):
            idx = order[i:i + batch_size]
            yield tuple(x[idx] for x in xs), y[idx]

    return epoch


def device_epochs(jax, xs: tuple[np.ndarray, ...], y: np.ndarray, batch_size: int, dev, jit: bool, seed: int = 0):
    """``device_put_once``: the whole training set placed on ``dev`` once, a permutation drawn on the device each
    epoch, each batch gathered there (jitted with the step's ``jit``)."""
    # the upload is asynchronous: wait for it here, before any clock starts, so no epoch's time holds it
    xs_d, y_d = jax.block_until_ready(jax.device_put((xs, y), dev))
    n = len(y)

    def take(arrays, idx):
        return jax.tree.map(lambda a: a[idx], arrays)

    gather = jax.jit(take) if jit else take
    key = jax.device_put(jax.random.key(seed), dev)

    def epoch():
        nonlocal key
        key, sub = jax.random.split(key)
        order = jax.random.permutation(sub, n)
        for i in range(0, n, batch_size):
            yield gather((xs_d, y_d), order[i:i + batch_size])

    return epoch


def tf_data_epochs(xs: tuple[np.ndarray, ...], y: np.ndarray, batch_size: int, seed: int = 0):
    """``tf_data_numpy``: ``tf.data`` from the arrays (TensorFlow kept off the GPU by the worker), the Keras stacks'
    pipeline of that name, the tuning study's (``bench.models.engines.tfdata.study_pipeline``: reshuffled each epoch
    from 20,000 examples, batched with AUTOTUNE parallel calls, prefetched with an AUTOTUNE buffer), read as NumPy
    batches, as Flax's MNIST example feeds its loop (flax examples/mnist, ``as_numpy_iterator``)."""
    import tensorflow as tf

    data = tfdata.study_pipeline(tf, (xs, y), len(y), batch_size, seed=seed)

    def epoch():
        yield from data.as_numpy_iterator()

    return epoch


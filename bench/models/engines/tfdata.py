"""The tuning study's tf.data input pipeline, which the Keras and plain-JAX engines both build for their ``tf_data_*``
data pipelines, with the values its post states (``bench.core.reference.tuning_study``).
"""

from __future__ import annotations

from typing import Any

from bench.core.reference.tuning_study import TF_DATA_SHUFFLE_BUFFER


def shuffle_buffer(n_train: int) -> int:
    """Examples the study's tf.data shuffle draws from: its 20,000, capped at the ``n_train`` examples there are
    (smoke data)."""
    return min(TF_DATA_SHUFFLE_BUFFER, n_train)


def study_pipeline(tf, arrays: Any, n_train: int, batch_size: int, seed: int | None = None) -> Any:
    """A ``tf.data.Dataset`` of ``batch_size`` batches of ``arrays`` (what ``from_tensor_slices`` takes: ``(x, y)``,
    ``n_train`` examples) as the study's post built its tf.data runs: reshuffled every epoch from a buffer of
    ``shuffle_buffer(n_train)`` examples (``seed``: the shuffle's, None for TensorFlow's global seed), batched with
    ``num_parallel_calls=tf.data.AUTOTUNE`` and prefetched with an AUTOTUNE buffer (``TF_DATA_AUTOTUNED``)."""
    auto = tf.data.AUTOTUNE
    return (tf.data.Dataset.from_tensor_slices(arrays)
            .shuffle(shuffle_buffer(n_train), seed=seed, reshuffle_each_iteration=True)
            .batch(batch_size, num_parallel_calls=auto)
            .prefetch(auto))

"""The Keras module of a stack, its seeding and the timing callback, shared by the Keras epoch engine (``epochs``) and
the step-timed Keras tasks (``steps``).

``sync=step`` follows the reference pattern (keras-benchmarks v0.0.5): a callback that overrides
``on_train_batch_end`` (so Keras hands it concrete logs), plus an explicit backend barrier before
each clock read (``bench.models.engines.frameworks.make_barrier``). ``sync=epoch`` (the default) hooks only the epoch
edges, so Keras' own batch path runs as it does without us.
"""

from __future__ import annotations

from bench.core.stacks import Stack
from bench.instruments.timing import EpochClock, EpochTimer


def import_keras(stack: Stack):
    """tf-keras for the Keras 2 stack, Keras 3 otherwise (its backend comes from KERAS_BACKEND)."""
    if stack.keras_major == 2:
        import tf_keras as keras
    else:
        import keras
    return keras


def set_random_seed(keras, seed: int = 0) -> bool:
    """``keras.utils.set_random_seed(seed)`` (Python, NumPy, the backend, Keras' global seed generator), except
    that on Keras 3's JAX and PyTorch backends it does not import TensorFlow only to seed it. Keras seeds TF
    whenever TF is installed, for tf.data pipelines, and importing it costs ~3 s of every cell; the seed is
    instead set when something imports TF later (a ``tf.data`` pipeline), by a post-import hook, so a
    pipeline shuffles as it would have.

    Returns whether TensorFlow was seeded now (False: not loaded; seeded when it is)."""
    import sys

    if keras.__version__.startswith("2.") or keras.backend.backend() == "tensorflow" or "tensorflow" in sys.modules:
        keras.utils.set_random_seed(seed)
        return True
    import wrapt
    from keras.src.utils import module_utils

    lazy_tf, looked = module_utils.tensorflow, module_utils.tensorflow._available
    lazy_tf._available = False  # Keras' own switch: "TensorFlow is not installed" for this one call
    try:
        keras.utils.set_random_seed(seed)
    finally:
        lazy_tf._available = looked  # a later tf.data pipeline finds TensorFlow as usual
    wrapt.register_post_import_hook(lambda tf: tf.random.set_seed(seed), "tensorflow")
    return False


def make_timing_callback(keras, timer: EpochTimer, split_first: bool = False, epochs: EpochClock | None = None):
    """The timing callback for ``timer``'s cadence.

    ``epochs`` (an ``EpochClock``, or None): also timed per epoch as Keras 2.0.8's progress bar did, begun at
    ``on_epoch_begin`` before the timer's own clock, ended at ``on_epoch_end``, which Keras 3 and tf.keras call
    after the epoch's validation (keras/src/backend/jax/trainer.py@v3.15.1:442, 511, 526; the same order on the
    other backends), as 2.0.8 did.

    ``sync=epoch``: a callback with epoch hooks only. It overrides no batch hook, so Keras keeps its own
    batch path: Keras 3 dispatches batch-end work to a thread pool (``CallbackList._async_train``) and
    tf.keras skips the batch hooks; neither waits for the device between steps. It passes the epoch's
    step count (``params['steps']``) to ``end_epoch``.
    Otherwise it also overrides the batch hooks, so Keras hands it concrete logs after every step (a
    host-device synchronisation of its own on every step, ``every:N`` included). Keras calls them once
    per execution: begin with its first step index, end with its last (which can overshoot the epoch's
    last step; Keras then runs fewer steps). ``predict`` is timed the same way, as one epoch.
    ``split_first``: the first step (build + compile) becomes an epoch of its own, so the timer's and
    telemetry's steady window is steps 2..N (the step-timed suite, ``step`` cadence only).
    """

    edges = epoch_edges_callback(keras, timer, epochs)
    steps = step_timer_callback(edges, timer, split_first)
    if split_first and timer.cadence.every != 1:
        raise ValueError("split_first needs the step cadence")
    return edges() if timer.cadence.every is None else steps()


def epoch_edges_callback(keras, timer: EpochTimer, epochs: EpochClock | None) -> type:
    """The ``sync=epoch`` callback class of ``make_timing_callback``: epoch hooks only (and fit's validation
    start, which closes the epoch's training steps), ``epochs`` begun before and ended after ``timer``'s epoch."""

    class EpochEdges(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epochs is not None:
                epochs.begin()
            timer.begin_epoch()

        def on_test_begin(self, logs=None):  # fit's validation: after the epoch's last training step
            self.close()

        def on_epoch_end(self, epoch, logs=None):
            self.close()
            if epochs is not None:
                epochs.end()

        def close(self):
            timer.end_epoch((self.params or {}).get("steps"))

    return EpochEdges


def step_timer_callback(edges: type, timer: EpochTimer, split_first: bool) -> type:
    """The ``every:N`` / ``step`` callback class of ``make_timing_callback``: ``edges``' epoch hooks plus the
    train and predict batch hooks, which end ``timer``'s steps (and, with ``split_first``, the first step's
    epoch)."""

    class StepTimer(edges):
        first = 0

        def close(self):
            timer.end_epoch()

        def on_predict_begin(self, logs=None):
            timer.begin_epoch()

        def on_predict_end(self, logs=None):  # before predict joins the batches' outputs on the host
            self.close()

        def on_train_batch_begin(self, batch, logs=None):
            self.first = batch

        def on_train_batch_end(self, batch, logs=None):
            total = (self.params or {}).get("steps") or batch + 1
            timer.end_step(min(batch, total - 1) - self.first + 1)
            if split_first and len(timer.intervals) == 1:
                timer.begin_epoch()

        on_predict_batch_begin = on_train_batch_begin
        on_predict_batch_end = on_train_batch_end

    return StepTimer


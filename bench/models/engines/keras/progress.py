"""How Keras' ``fit`` reports each batch's progress: the ``progress`` knob's forms
(``bench.core.families.keras.PROGRESS_FORMS``), what ``fit`` gets for each, and what the record says of it.

- ``keras_tqdm``: what the 2017 comparison's notebooks ran (github.com/jasmeetsb/deep-learning-keras-projects@fa5f333,
  keras-performance-comparison/keras_perf_test_*.ipynb, e.g. keras_perf_test_mnist_mlp.ipynb:156):
  ``fit(..., verbose=0, callbacks=[TQDMNotebookCallback(leave_inner=True, leave_outer=True)])``. keras_tqdm's
  ``on_batch_end`` (keras_tqdm/tqdm_callback.py@v2.0.1:110-122, 135-149; unchanged to its last commit, 9696a8d)
  reads every batch's logs, appends each metric's value to the epoch's running lists, formats their means into the
  bar's description and moves the notebook bar. ``notebook_callback`` does the same reading and formatting, without
  drawing a bar (no notebook here).
- ``bar``: ``fit(verbose=1)``, Keras' ``ProgbarLogger``, its output discarded
  (``bench.models.engines.keras.epochs.progress_bar_discarded``): the Keras 2.0.8
  example scripts' ``fit`` (e.g. examples/mnist_mlp.py@2.0.8:53), and Keras' own default.
- ``none``: ``fit(verbose=0)`` and no per-batch callback.

Why the form matters on Keras 3: ``CallbackList`` dispatches batch-end callbacks asynchronously, in a thread pool,
only on a thread-safe backend (JAX, PyTorch) and only when no callback given to ``fit`` overrides ``on_batch_end``
or ``on_train_batch_end`` (keras/src/callbacks/callback_list.py@v3.15.1:59-84, 188-198); the progress bar is added
after that check (line 49), so it keeps the pool. A callback that overrides a batch-end hook turns it off: its logs
are converted to Python floats on the training thread after every step (``pythonify_logs``, lines 212-220), which
waits for the step. On TensorFlow (``IS_THREAD_SAFE = False``) Keras 3 converts them on the training thread in every
form; tf-keras calls batch hooks only when a callback implements them (tf_keras/src/callbacks.py@2.21.0:250-252), and
then converts the logs for a callback without ``_supports_tf_logs`` (lines 292-300), the bar converting its own
(lines 1171-1174).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.core.families.keras import PROGRESS_FORMS


def notebook_callback(keras) -> Any:
    """A ``keras.callbacks.Callback`` whose batch-end hook reads the logs as keras_tqdm 2.0.1's ``TQDMCallback`` did
    (the base of ``TQDMNotebookCallback``), in its steps mode (Keras 3 and tf-keras give ``params['steps']``): every
    batch but the epoch's last appends each log value to the epoch's running lists and formats their means,
    ``"{name}: {value:0.3f}"`` joined by ``", "`` (tqdm_callback.py@v2.0.1:110-122, 135-149). keras_tqdm kept only
    the names in ``params['metrics']`` (Keras 2.0.8's loss and metrics); Keras 3 passes no such list, and its batch
    logs hold the loss and compiled metrics only, so every entry is read. The text is kept (``description``), not
    drawn. It overrides ``on_batch_end``, as keras_tqdm did, which Keras' ``on_train_batch_end`` calls."""

    class NotebookBatchLogs(keras.callbacks.Callback):
        description = ""
        total: int | None = None
        running: dict[str, list[float]]  # each log entry's values this epoch

        def on_epoch_begin(self, epoch, logs=None):
            self.total = (self.params or {}).get("steps")
            self.running = {}

        def on_batch_end(self, batch, logs=None):
            if self.total is not None and batch + 1 >= self.total:
                return  # keras_tqdm's `inner_count < inner_total`: the last batch's logs are not read
            for name, value in (logs or {}).items():
                self.running.setdefault(name, []).append(float(value))
            self.description = ", ".join(f"{k}: {np.mean(v):0.3f}" for k, v in self.running.items())

    return NotebookBatchLogs()


def fit_progress(keras, form: str) -> tuple[int, list[Any]]:
    """``fit``'s ``verbose`` and the callbacks to add for a progress ``form`` (``PROGRESS_FORMS``).

    Raises:
        ValueError: an unknown form.
    """
    if form not in PROGRESS_FORMS:
        raise ValueError(f"unknown progress form {form!r}; expected one of {', '.join(PROGRESS_FORMS)}")
    return (1 if form == "bar" else 0), ([notebook_callback(keras)] if form == "keras_tqdm" else [])


def overrides_batch_end(keras, callback) -> bool:
    """Whether ``callback`` overrides a training batch-end hook (``on_batch_end`` or ``on_train_batch_end``), the
    test Keras 3 makes before dispatching batch-end callbacks asynchronously (callback_list.py@v3.15.1:73-76)."""
    base = keras.callbacks.Callback
    return any(getattr(type(callback), h) is not getattr(base, h) for h in ("on_batch_end", "on_train_batch_end"))


def progress_record(keras, form: str, verbose: int, callbacks: list[Any]) -> dict[str, Any]:
    """What the record's ``settings`` says of a cell's progress reporting: ``progress`` (the form that ran),
    ``verbose`` (what ``fit`` got), ``batch_end_hook`` (a callback given to ``fit`` overrides a training batch-end
    hook: the timing callback under ``sync`` every:N or step, or keras_tqdm's) and, on Keras 3,
    ``keras_async_batch_end`` / ``keras_async_test_batch_end``: whether Keras' own ``CallbackList`` of those
    callbacks dispatches training / validation batch-end calls asynchronously (False on TensorFlow always; absent on
    tf-keras, which has no such dispatch). keras_tqdm overrides the training hook only, so under it Keras 3 on JAX
    and PyTorch keeps the validation's asynchronous dispatch (callback_list.py@v3.15.1:73-78, 200-204), where Keras
    2.0.8's test loop fetched every batch's outputs (keras/engine/training.py@2.0.8:1339)."""
    out: dict[str, Any] = {"progress": form, "verbose": verbose,
                           "batch_end_hook": any(overrides_batch_end(keras, cb) for cb in callbacks)}
    if not keras.__version__.startswith("2."):
        # Keras' own check, on a list that is never run (no model, no params): the attributes it sets
        checked = keras.callbacks.CallbackList(list(callbacks))
        out["keras_async_batch_end"] = bool(checked._async_train)
        out["keras_async_test_batch_end"] = bool(checked._async_test)
    return out

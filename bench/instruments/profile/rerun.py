"""The steps a profile runs, after the cell's timed measurement: each engine hands the worker a ``ProfileRun`` built
here from the pieces it trained with (the same model, optimizer state, data pipeline and step), which runs
``WARMUP`` steps, opens the profiler's window (``Window.start``), runs the profiled steps, closes it
(``Window.stop``) and returns the steps run before and inside the window (``Held``).

Keras runs its own loop: the profile is one more ``fit`` (or ``predict``) call of a few steps with a callback that
opens the window at the first step after the warm-up and closes it as the step after the last profiled one begins.
Its calls of the compiled step are the size the timed fit's were (``settings.steps_per_call``): where Keras ended
each timed call at the epoch's end (``steps_per_execution`` over the epoch's steps), the profiled fit runs epochs of
the cell's own data, one call each (``TimedCalls``), not executions of ``steps_per_execution`` steps.
The window's callback overrides only the batch-begin hook, which Keras 3 calls without logs, so it changes nothing of
Keras' batch-end path (keras/src/callbacks/callback_list.py@v3.15.1, ``_configure_async_dispatch`` looks at the
batch-end hooks only); the fit reports progress as the cell did, its ``verbose`` and its progress callbacks
(``keras_fit``): under the classic default (``verbose=0`` and the 2017 notebooks' batch-end callback, which reads
every step's logs) Keras 3 on JAX and PyTorch gives up its asynchronous batch-end dispatch in the profile as in the
timed run; under ``progress=bar`` the bar's per-step log fetch is in the profile too (in Keras' thread pool on JAX
and PyTorch).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, Protocol

#: Steps run before the window opens: the pipeline refilled, the step's caches warm after the epoch's end.
WARMUP = 1


class Window(Protocol):
    """The profiler's window (``bench.instruments.profile.window.Window``)."""

    def start(self) -> None:
        """Start the profiler if nothing started it before the warm-up, barrier, open the window's annotation."""

    def stop(self) -> None:
        """Barrier, close the annotation, stop the profiler."""

    @property
    def open(self) -> bool:
        """Whether ``start`` ran and ``stop`` did not yet."""


class Held(NamedTuple):
    """What a profile's steps ran: ``warmup`` steps before the window opened, ``steps`` inside it."""

    warmup: int
    steps: int


#: ``run(window, steps)`` -> the steps run before and inside the window (``steps`` asked for; a Keras fit with
#: ``steps_per_execution`` > 1 runs whole calls: ``keras_fit``).
ProfileRun = Callable[[Window, int], Held]


def _cycle(batches: Callable[[], Iterable[Any]]) -> Iterator[Any]:
    """The batches of one epoch after another (an epoch may hold fewer than the profile's steps)."""
    while True:
        empty = True
        for batch in batches():
            empty = False
            yield batch
        if empty:
            raise RuntimeError("the training data yielded no batch")


def loop(step: Callable[[Any], Any], batches: Callable[[], Iterable[Any]], before: Callable[[], Any] | None = None,
         close: Callable[[], None] | None = None) -> ProfileRun:
    """A hand-written loop's steps (PyTorch's and JAX's ``fit``): ``before()`` once (the model in training mode),
    then ``step(batch)`` on ``batches()``' batches, epoch after epoch; ``close()`` at the end (a loader's threads)."""

    def run(window: Window, steps: int) -> Held:
        try:
            if before is not None:
                before()
            it = _cycle(batches)
            for _ in range(WARMUP):
                step(next(it))
            window.start()
            for _ in range(steps):
                step(next(it))
            window.stop()
        finally:
            if close is not None:
                close()
        return Held(WARMUP, steps)

    return run


def calls(call: Callable[[], Any]) -> ProfileRun:
    """Steps that are whole calls (the paper suite's PyTorch steps, a Keras job's own ``call``)."""
    return loop(lambda _: call(), lambda: iter((None,)))


def per_execution(model: Any) -> int:
    """The steps one call of ``model``'s compiled step runs (its ``steps_per_execution``: an int in Keras 3, a
    tf.Variable ``_steps_per_execution`` in tf-keras, tf_keras/src/engine/training.py@v2.21.0
    ``_configure_steps_per_execution``); 1 when it has none."""
    per = getattr(model, "steps_per_execution", None)
    if per is None:
        per = getattr(model, "_steps_per_execution", None)
    try:
        return max(1, int(per)) if per is not None else 1
    except (TypeError, ValueError):
        return 1


def executions(per: int, steps: int) -> tuple[int, int]:
    """(steps inside the window, batches the call runs) for a Keras call whose compiled step runs ``per`` steps a
    call (``steps_per_execution``, or the timed fit's calls where Keras ended them at the epoch: ``TimedCalls``):
    Keras 3 and tf-keras call the batch hooks once per call (keras/src/trainers/epoch_iterator.py@v3.15.1
    ``_enumerate_iterator``: begin steps 0, per, 2 * per...), so the warm-up and the window are whole calls: the
    warm-up the fewest that hold ``WARMUP`` steps, the window ``steps // per`` of them (at least one: a call longer
    than ``steps`` is profiled whole), and one more whose begin closes the window."""
    window = max(1, steps // per) * per
    warm = -(-WARMUP // per) * per
    return window, warm + window + per


class TimedCalls(NamedTuple):
    """What the timed fit's calls of the compiled train function ran: ``steps`` at most (``settings.steps_per_call``:
    ``steps_per_execution`` capped at the epoch's steps), on ``data``, the ``fit`` data arguments of one epoch of
    the cell's batches as the timed fit had them (``bench.models.engines.keras.epochs.fit``)."""

    steps: int
    data: dict[str, Any]


def call_steps(model: Any, timed: TimedCalls | None) -> tuple[int, bool]:
    """(steps one profiled call runs, whether the profile runs epochs of ``timed.data``, one call each): where
    Keras ended the timed calls at the epoch's end (``timed.steps`` under ``model``'s ``steps_per_execution``),
    only an epoch of that many batches makes Keras end a call there again (Keras 3 ends an execution where its
    data iterator does, keras/src/backend/jax/trainer.py@v3.15.1 ``_make_function``; tf-keras
    ``DataHandler._truncate_execution_to_epoch``); else ``steps_per_execution``, in one epoch."""
    per = per_execution(model)
    if timed is not None and 0 < timed.steps < per:
        return timed.steps, True
    return per, False


def short_call_note(steps_per_call: int | None, steps_per_epoch: int | None) -> str | None:
    """The record's note where each timed epoch of ``steps_per_epoch`` steps ended in a call shorter than the
    profiled ones (``steps_per_epoch`` not a multiple of ``steps_per_call``, ``settings.steps_per_call``, and not
    shorter than it: Keras ends a call at the epoch's end, ``call_steps``), else None. The profile runs whole calls
    of ``steps_per_call`` steps only (``executions``), so the timed fit's shorter call, with its own call overhead
    over fewer steps, is not in its window, while ``profile.slowdown`` divides by a timed ms/step that includes it."""
    # An epoch shorter than one call is one call of the epoch's steps, and the profile then runs calls of that
    # length (``executions``): nothing left out.
    if not steps_per_call or not steps_per_epoch or steps_per_epoch % steps_per_call == 0 \
            or steps_per_epoch < steps_per_call:
        return None
    whole = steps_per_epoch // steps_per_call
    return (f"profile: its calls ran {steps_per_call} steps each; each timed epoch of {steps_per_epoch} steps ran "
            f"{whole} such call{'' if whole == 1 else 's'} and a last one of {steps_per_epoch % steps_per_call} "
            "(Keras ends a call at the epoch's end), which the profile does not hold: profile.slowdown divides by a "
            "timed ms/step that includes it")


def window_callback(keras: Any, window: Window, steps: int, predict: bool = False,
                    per: int | None = None, epoch_steps: int = 0) -> Any:
    """A Keras callback that opens ``window`` as the first training (``predict``: prediction) batch at or past
    ``WARMUP`` begins and closes it as the first batch at or past that one + ``steps`` begins (with
    ``steps_per_execution`` > 1, Keras calls the hook once per call: ``executions``), or at the call's end when
    the data ran out first (a dataset of fewer batches: the window then holds fewer steps; the last call begun
    counted as ``per`` steps, by default the model's ``steps_per_execution``). A fit of several epochs of
    ``epoch_steps`` steps (``call_steps``) counts its batches across them (Keras numbers them from 0 each epoch).
    ``held`` is then what ran (``Held``: the steps before the window opened, the steps it held). It reads no logs
    and says so (``_supports_tf_logs``): tf-keras converts every call's logs to NumPy, a device sync, for a callback
    implementing a batch hook without it (tf_keras/src/callbacks.py@2.21.0:242-248, 292-300), which the timed fit
    does not do without a batch-end reader (``progress=none`` under ``sync=epoch``)."""

    class ProfileWindow(keras.callbacks.Callback):
        first: int | None = None
        last = 0
        steps_held = 0
        base = 0  # the steps of the epochs before this one

        def __init__(self) -> None:
            super().__init__()
            # it reads no logs: tf-keras then hands the batch hooks its tensors as they are, where a callback without
            # this flag makes it convert every call's logs to NumPy, a device sync the timed fit need not have had
            self._supports_tf_logs = True

        @property
        def held(self) -> Held:
            return Held(self.first or 0, self.steps_held)

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.base = epoch * epoch_steps  # fit's epochs are numbered from 0 (no initial_epoch here)

        def _begin(self, batch: int, logs: Any = None) -> None:
            step = self.base + batch
            if self.first is None and step >= WARMUP:
                self.first = step
                window.start()
            elif self.first is not None and window.open and step >= self.first + steps:
                self.steps_held = step - self.first
                window.stop()
            self.last = step

        def _end(self, logs: Any = None) -> None:
            if self.first is not None and window.open:  # the data ran out: the last call begun is done
                self.steps_held = self.last - self.first + (per or per_execution(self.model))
                window.stop()

        if predict:
            on_predict_batch_begin, on_predict_end = _begin, _end
        else:
            on_train_batch_begin, on_train_end = _begin, _end

    return ProfileWindow()


def batches(run: ProfileRun, steps: int) -> int:
    """The steps ``run`` runs for ``steps`` profiled ones, warm-up and the step that closes the window included:
    a Keras call's whole executions (``KerasCall.batches``), else ``WARMUP + steps``."""
    planned = getattr(run, "batches", None)
    return planned(steps) if callable(planned) else WARMUP + steps


class KerasCall:
    """A profiled Keras call (``keras_fit``, ``keras_predict``): ``call(window, steps, data)``, which runs
    ``batches(steps)`` batches (``executions`` of the steps a call runs: ``call_steps`` of ``model`` and ``timed``)
    of ``data``: ``timed.data`` where the profile runs epochs of it, else what ``make_data(batches(steps))``
    returns. ``prepare(steps)`` makes that data before the profiler starts (``bench.instruments.profile.capture``
    calls it before ``Window.arm``), so that repeating or concatenating the cell's data for the call is neither in
    the trace nor held by the profiler; a call left unprepared makes it itself."""

    def __init__(self, model: Any, call: Callable[[Window, int, Any], Held],
                 make_data: Callable[[int], Any], timed: TimedCalls | None = None) -> None:
        self.model, self.call, self.make_data, self.timed = model, call, make_data, timed
        self._prepared: tuple[int, Any] | None = None

    def prepare(self, steps: int) -> None:
        epochs = call_steps(self.model, self.timed)[1]
        self._prepared = (steps, self.timed.data if epochs and self.timed else self.make_data(self.batches(steps)))

    def __call__(self, window: Window, steps: int) -> Held:
        if self._prepared is None or self._prepared[0] != steps:
            self.prepare(steps)
        assert self._prepared is not None
        data, self._prepared = self._prepared[1], None  # the call's own: not kept past it
        return self.call(window, steps, data)

    def batches(self, steps: int) -> int:
        return executions(call_steps(self.model, self.timed)[0], steps)[1]


def keras_fit(keras: Any, model: Any, fit_kw: Callable[[int], dict[str, Any]], verbose: int,
              quiet: Callable[[int], Any], progress: Sequence[Any] = (), timed: TimedCalls | None = None) -> ProfileRun:
    """One more ``model.fit`` on the cell's training data, no validation, its calls of the compiled step the size
    the timed fit's were (``call_steps``): one epoch of whole executions (``executions``: with
    ``steps_per_execution`` 1, ``WARMUP + steps + 1`` steps) on ``fit_kw(n)`` (its data arguments, holding at least
    ``n`` batches); or, where Keras ended each timed call at the epoch's end (``timed``), epochs of ``timed.data``,
    one call each, as the timed fit ran them (the window then holds one call and Keras' epoch end and begin, not
    the timed fit's validation). It reports its progress as the cell did: ``verbose`` as the cell's (its output
    through ``quiet(verbose)``, the engine's ``progress_bar_discarded``) and the cell's progress callbacks
    (``progress``: the 2017 notebooks' batch-end hook, which reads the logs every step)."""

    def run(window: Window, steps: int, data: dict[str, Any]) -> Held:
        per, epochs = call_steps(model, timed)
        inside, n = executions(per, steps)
        length = {"epochs": n // per} if epochs else {"epochs": 1, "steps_per_epoch": n}
        cb = window_callback(keras, window, inside, per=per, epoch_steps=per if epochs else n)
        with quiet(verbose):
            model.fit(**data, **length, verbose=verbose, callbacks=[cb, *progress])
        return cb.held

    return KerasCall(model, run, fit_kw, timed)


def keras_predict(keras: Any, model: Any, inputs: Callable[[int], Any], verbose: int,
                  quiet: Callable[[int], Any]) -> ProfileRun:
    """One more ``model.predict`` over ``inputs(n)`` (``n`` batches, whole executions), as ``keras_fit``."""

    def run(window: Window, steps: int, data: Any) -> Held:
        inside, _ = executions(per_execution(model), steps)
        cb = window_callback(keras, window, inside, predict=True)
        with quiet(verbose):
            model.predict(data, verbose=verbose, callbacks=[cb])
        return cb.held

    return KerasCall(model, run, inputs)

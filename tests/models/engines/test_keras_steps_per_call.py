"""What one call of Keras' compiled train function runs under ``steps_per_execution`` (``settings.steps_per_call``),
against the batches each call of the train function took, counted by wrapping it (Keras 3 on JAX, CPU)."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

#: Fit mnist_cnn_tuning on 32 synthetic images in a fresh Keras 3 + JAX process, for each (steps_per_execution,
#: batch size, sync): the record's settings and metrics, and the batches each call of the train function took;
#: with a second argument ``profile``, then the engine's profile steps too (``profiled``).
_FIT = """
import dataclasses, json, sys
from keras.src.backend.jax import trainer as jax_trainer
from bench.core.families.keras import KerasEpochSettings
from bench.core.stacks import get_stack
from bench.models.engines.keras import epochs as keras_epochs
from bench.models.workloads import get_workload
from tests.helpers.cells import engine_cell

calls = []
make = jax_trainer.JAXTrainer.make_train_function

def counting(self, force=False):
    make(self, force)
    fn = self.train_function
    if getattr(fn, "counted", False):
        return
    def train_function(state, iterator):
        taken = [0]
        def batches():
            for batch in iterator:
                taken[0] += 1
                yield batch
        out = fn(state, batches())
        calls.append(taken[0])
        return out
    train_function.counted = True
    self.train_function = train_function

jax_trainer.JAXTrainer.make_train_function = counting
hooks = []
import keras
batch_end = keras.callbacks.CallbackList.on_train_batch_end

def counted_batch_end(self, batch, logs=None):
    hooks.append(batch)
    return batch_end(self, batch, logs)

keras.callbacks.CallbackList.on_train_batch_end = counted_batch_end
class Window:  # what a profile's steps need of bench.instruments.profile.window.Window
    started = stopped = False
    @property
    def open(self): return self.started and not self.stopped
    def start(self): self.started = True
    def stop(self): self.stopped = True

def profiled(got):  # the profile's steps (bench run --profile) after the timed fit: each call's batches, what it held
    calls.clear()
    window = Window()
    held = got.profile_run(window, 5)
    return {"calls": list(calls), "held": list(held), "closed": window.stopped}

w = dataclasses.replace(get_workload("mnist_cnn_tuning"), samples={"smoke": 32, "full": None})
ds = w.load_data("smoke", "synthetic")
out = []
for spe, batch, sync, progress in json.loads(sys.argv[1]):
    calls.clear()
    hooks.clear()
    got = keras_epochs.fit(get_stack("keras3-jax"), w, ds, engine_cell("keras3-jax", w, 2, batch),
                           KerasEpochSettings(progress=progress, steps_per_execution=spe, sync=sync))
    m = got.metrics.model_dump(exclude_unset=True)
    out.append({"settings": got.settings.model_dump(exclude_unset=True), "calls": list(calls), "hooks": len(hooks),
                **{k: m.get(k) for k in ("steps_per_epoch", "first_step_s", "ms_per_step_basis", "steps")},
                "profiled": profiled(got) if sys.argv[2:] == ["profile"] else None})
print("RESULT " + json.dumps(out))
"""


def test_steps_per_call_is_steps_per_execution_capped_at_the_epoch():
    from bench.models.engines.keras.epochs import steps_per_call

    assert steps_per_call(512, 235) == 235  # the tuning study's 512 at batch 256 on 60,000 images
    assert steps_per_call(512, 4) == 4
    assert steps_per_call(3, 8) == 3
    assert steps_per_call(1, 235) == 1


@pytest.mark.skipif(not importlib.util.find_spec("jax"), reason="jax not installed")
def test_the_record_says_what_a_call_of_the_train_function_ran():
    """The record said settings.steps_per_execution 512 of a 4-step epoch and nothing of what ran: each call took
    the epoch's 4 batches (Keras ends a call at the epoch's end). settings.steps_per_call says so; at 3 steps per
    execution of an 8-step epoch the calls take 3, 3 and 2. Under sync=step such a call is timed whole, so
    metrics.first_step_s (the first step alone) is null rather than the first call's time over its steps."""
    cases = [(512, 8, "epoch", "none"), (3, 4, "epoch", "keras_tqdm"), (512, 8, "step", "none"),
             (1, 8, "step", "none")]
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", _FIT, json.dumps(cases)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))[7:])
    spe512, spe3, timed512, timed1 = got
    assert spe512["calls"] == [4, 4] and spe512["steps_per_epoch"] == 4
    assert spe512["settings"]["steps_per_execution"] == 512 and spe512["settings"]["steps_per_call"] == 4
    assert spe3["calls"] == [3, 3, 2] * 2 and spe3["settings"]["steps_per_call"] == max(spe3["calls"]) == 3
    # keras_tqdm's batch-end hook: Keras calls it once per call, not after every step (settings.batch_end_hook)
    assert spe3["settings"]["batch_end_hook"] is True and spe3["hooks"] == len(spe3["calls"]) == 6
    assert timed512["calls"] == [4, 4] and timed512["ms_per_step_basis"] == "execution" and timed512["steps"] == 4
    assert timed512["first_step_s"] is None
    assert timed1["calls"] == [1] * 8 and timed1["settings"]["steps_per_call"] == 1 and timed1["first_step_s"] > 0


def test_the_batch_end_hook_field_says_keras_calls_it_once_per_call():
    """settings.batch_end_hook said Keras hands the hook the logs "after every step"; under steps_per_execution > 1
    Keras calls it once per call (the test above counts 6 hooks for 16 steps at 3 steps per execution)."""
    from bench.results.schema import EffectiveSettings

    help_text = EffectiveSettings.model_fields["batch_end_hook"].description or ""
    assert "once per call" in help_text and "steps_per_call" in help_text


@pytest.mark.skipif(not importlib.util.find_spec("jax"), reason="jax not installed")
def test_the_profile_calls_the_train_function_with_as_many_steps_as_the_timed_fit_did():
    """bench run --profile re-ran a steps_per_execution=512 cell in calls of 512 steps (3 x 512 batches: its data
    repeated 128 times), while each timed call ran the epoch's 4 (settings.steps_per_call): profile.steps,
    ms_per_step and slowdown measured calls of another size than the timed ones. The profile now runs epochs of
    the cell's data, one call each, as the timed fit did; where the epoch holds steps_per_execution steps or more
    (3 of 8), one epoch of whole calls of that many, as before."""
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    cases = [(512, 8, "epoch", "none"), (3, 4, "epoch", "none")]
    proc = subprocess.run([sys.executable, "-c", _FIT, json.dumps(cases), "profile"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    spe512, spe3 = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert spe512["calls"] == [4, 4] and spe512["settings"]["steps_per_call"] == 4
    # a warm-up call, one inside the window, one whose begin closes it: each the timed call's 4 steps, not 512
    assert spe512["profiled"] == {"calls": [4, 4, 4], "held": [4, 4], "closed": True}
    assert spe3["settings"]["steps_per_call"] == 3
    assert spe3["profiled"] == {"calls": [3, 3, 3], "held": [3, 3], "closed": True}

"""What one call of Keras' compiled train function runs under ``steps_per_execution`` (``settings.steps_per_call``),
against the batches each call of the train function took, counted by wrapping it (Keras 3 on JAX, CPU)."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

#: Fit mnist_cnn_tuning on 32 synthetic images in a fresh Keras 3 + JAX process, for each (steps_per_execution,
#: batch size, sync): the record's settings and metrics, and the batches each call of the train function took.
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
w = dataclasses.replace(get_workload("mnist_cnn_tuning"), samples={"smoke": 32, "full": None})
ds = w.load_data("smoke", "synthetic")
out = []
for spe, batch, sync in json.loads(sys.argv[1]):
    calls.clear()
    got = keras_epochs.fit(get_stack("keras3-jax"), w, ds, engine_cell("keras3-jax", w, 2, batch),
                           KerasEpochSettings(progress="none", steps_per_execution=spe, sync=sync))
    m = got.metrics.model_dump(exclude_unset=True)
    out.append({"settings": got.settings.model_dump(exclude_unset=True), "calls": list(calls),
                **{k: m.get(k) for k in ("steps_per_epoch", "first_step_s", "ms_per_step_basis", "steps")}})
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
    cases = [(512, 8, "epoch"), (3, 4, "epoch"), (512, 8, "step"), (1, 8, "step")]
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", _FIT, json.dumps(cases)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))[7:])
    spe512, spe3, timed512, timed1 = got
    assert spe512["calls"] == [4, 4] and spe512["steps_per_epoch"] == 4
    assert spe512["settings"]["steps_per_execution"] == 512 and spe512["settings"]["steps_per_call"] == 4
    assert spe3["calls"] == [3, 3, 2] * 2 and spe3["settings"]["steps_per_call"] == max(spe3["calls"]) == 3
    assert timed512["calls"] == [4, 4] and timed512["ms_per_step_basis"] == "execution" and timed512["steps"] == 4
    assert timed512["first_step_s"] is None
    assert timed1["calls"] == [1] * 8 and timed1["settings"]["steps_per_call"] == 1 and timed1["first_step_s"] > 0

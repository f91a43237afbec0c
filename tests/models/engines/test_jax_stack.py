"""The plain-JAX stack (``jax``: Flax NNX + optax): its models, optimizers, knobs, augmentation and records.

Each check compares with an independent measure of the same thing: Keras 2.0.8's optimizer formulas (the
references in test_classic_pipelines), the Keras and PyTorch builds' parameter counts, the PyTorch loop's
learning on the same data, the source's augmentation done by scipy.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bench.core import knobs
from bench.core.families.jax import JaxEpochSettings
from bench.core.families.torch import TorchEpochSettings
from bench.core.stacks import DEFAULT_STACKS, STACKS, get_stack
from bench.models.workloads import WORKLOADS, Workload, get_workload
from tests.conftest import has, needs_torch
from tests.helpers.cells import engine_cell, make_cell
from tests.helpers.optimizers import GRADS, P0, reference, rmsprop_208, with_decay

needs_flax = pytest.mark.skipif(not (has("flax") and has("optax")), reason="flax and optax not installed")
FLAX_WORKLOADS = ["mnist_mlp", "mnist_cnn", "mnist_cnn_tuning"]
JAX = get_stack("jax")


# ---- the stack and its knobs (no framework) ----------------------------------------------------------------

def test_jax_is_a_default_stack_on_the_tensorflow_layer():
    assert (JAX.family, JAX.backend, JAX.label, JAX.reference, JAX.default) == ("jax", "jax", "JAX (Flax)", None, True)
    assert JAX.imports == ("jax", "flax", "optax", "tensorflow") and JAX.layer == "tensorflow" and JAX.sublayer == "jax"
    assert "jax" in DEFAULT_STACKS and JAX.keras_major is None


def test_jax_knobs_are_validated_and_named_as_the_other_engines():
    assert knobs.settings_class("jax") is JaxEpochSettings
    assert knobs.KNOBS["jax"]["data_pipeline"] == ("numpy_batches", "device_put_once", "tf_data_numpy")
    assert knobs.check(JAX, {}) is None
    assert knobs.check(JAX, {"jit_compile": False, "precision": "bfloat16", "tf32": "off", "sync": "every:4"}) is None
    assert "does not apply to the jax engine" in knobs.check(JAX, {"compile": "default"})
    assert "does not apply to the jax engine" in knobs.check(JAX, {"steps_per_execution": 4})
    assert "jit_compile='auto' is not valid" in knobs.check(JAX, {"jit_compile": "auto"})
    assert "precision='mixed_bfloat16' is not valid" in knobs.check(JAX, {"precision": "mixed_bfloat16"})
    # the knobs both other engines name the same way keep their names here
    shared = set(knobs.KNOBS["keras"]) & set(knobs.KNOBS["torch"])
    assert shared <= set(knobs.KNOBS["jax"])
    assert knobs.normalise("jax", {"jit_compile": True, "data_pipeline": "device_put_once"}) == {
        "data_pipeline": "device_put_once"}


def test_augment_on_jax_takes_the_default_pipeline_only():
    s = JaxEpochSettings(data_pipeline="device_put_once")
    assert "add augment=false" in knobs.augmentation_problem(s, "cifar10_cnn", True)
    assert knobs.augmentation_problem(JaxEpochSettings(), "cifar10_cnn", True) is None
    assert knobs.augmentation_problem(dataclasses.replace(s, augment=False), "cifar10_cnn", True) is None


def test_paper_cells_on_jax_are_unsupported_with_the_reason_not_a_crash(tmp_path):
    from bench.run.worker import run_cell

    assert "no step-timed engine" in knobs.check(JAX, {}, "steps")
    rec = run_cell(make_cell(stack="jax", suite="paper", workload="bert", task="fit", size="smoke", device="cpu",
                             batch_size=2, variant="bs2"))
    assert rec["status"] == "unsupported" and "no step-timed engine" in rec["reason"]


def test_an_unsupported_knob_is_recorded_as_asked_for_never_as_in_effect():
    """The worker's record of a cell refused before any engine ran: the knob it asked for is in
    ``settings_requested`` only (the old skeleton put it in ``settings``, the settings in effect, too)."""
    from bench.results.cell import Cell
    from bench.run.worker import run_cell

    rec = run_cell(Cell(stack="jax", suite="classic", workload="mnist_mlp", task="fit", size="smoke", device="cpu",
                        variant="compile=true", settings={"compile": True}))
    assert rec["status"] == "unsupported" and "'compile' does not apply" in rec["reason"]
    assert rec["settings_requested"] == {"compile": True} and rec["settings"] == {}


def test_a_workload_without_a_flax_model_is_unsupported_on_jax_with_the_reason(monkeypatch):
    from bench.results.cell import Cell
    from bench.run import worker

    w = dataclasses.replace(get_workload("mnist_mlp"), build_flax=None)
    monkeypatch.setattr(worker, "get_workload", lambda name: w)
    rec = worker.run_cell(Cell(stack="jax", suite="classic", workload="mnist_mlp", task="fit", size="smoke",
                               device="cpu"))
    assert rec["status"] == "unsupported"
    assert rec["reason"] == ("mnist_mlp has no Flax NNX definition (Workload.build_flax) yet: the jax engine cannot "
                             "run it")


def test_the_paper_table_has_no_jax_column():
    import pandas as pd

    from bench.results.report.paper import paper_columns

    keras, others = paper_columns(pd.DataFrame({"suite": ["paper"], "stack": ["jax"]}))
    assert "jax" not in keras + others and "pytorch" in others


def test_the_tuning_grid_has_a_jax_block_of_valid_variants():
    from bench.run import sweep

    variants = sweep.default_grid("tuning").variants("jax")
    assert variants[0].baseline and variants[0].name == "default" and len(variants) >= 4
    assert all(knobs.check(JAX, v.settings) is None for v in variants)
    assert {"jit_compile=false", "data_pipeline=device_put_once", "precision=bfloat16"} <= {v.name for v in variants}


# ---- models and optimizers (Flax, optax) -------------------------------------------------------------------

def test_every_workload_with_a_flax_model_declares_it_as_the_last_field():
    assert dataclasses.fields(Workload)[-1].name == "build_flax"
    assert {n for n, w in WORKLOADS.items() if isinstance(w, Workload) and w.build_flax} >= set(FLAX_WORKLOADS)


@needs_flax
@pytest.mark.framework
def test_flax_dropout_follows_train_and_eval():
    from flax import nnx

    model = get_workload("mnist_mlp").build_flax({"num_classes": 10}, nnx.Rngs(params=0, dropout=1))
    x = np.ones((4, 784), np.float32)
    model.eval()
    np.testing.assert_array_equal(np.asarray(model(x)), np.asarray(model(x)))
    model.train()
    assert not np.allclose(np.asarray(model(x)), np.asarray(model(x)))


def optax_steps(w) -> np.ndarray:
    import jax
    import jax.numpy as jnp
    import optax

    from bench.models.engines.jax.epochs import make_optimizer

    jax.config.update("jax_enable_x64", True)
    try:
        tx, _ = make_optimizer(optax, w)
        p = jnp.asarray(P0, jnp.float64)
        state = tx.init(p)
        for g in GRADS:
            updates, state = tx.update(jnp.asarray(g, jnp.float64), state, p)
            p = optax.apply_updates(p, updates)
        return np.asarray(p, np.float64)
    finally:
        jax.config.update("jax_enable_x64", False)


@needs_flax
@pytest.mark.framework
@pytest.mark.parametrize("name, decay", [("mnist_cnn", 0.0), ("cifar10_cnn", 1e-6), ("cifar10_cnn", 0.5),
                                         ("mnist_mlp", 0.0)])
def test_optax_optimizer_is_keras_208s_rule(name, decay):
    """optax's RMSprop with eps outside the root and its Adadelta are Keras 2.0.8's rules, the decay its
    lr / (1 + decay * t) (0.5 makes the schedule visible in three steps); optax's default RMSprop (eps inside
    the root) is not."""
    import optax

    w = with_decay(name, decay)
    np.testing.assert_allclose(optax_steps(w), reference(w), rtol=1e-12, atol=1e-12)
    if decay == 0.5:
        assert not np.allclose(optax_steps(with_decay(name, 0.0)), reference(w), rtol=1e-6)
    if w.optimizer.name == "rmsprop":
        o = w.optimizer
        inside = rmsprop_208(GRADS, P0, o.learning_rate, o.rho, o.epsilon, o.decay, eps_inside=True)
        default = optax.rmsprop(o.learning_rate, decay=o.rho, eps=o.epsilon)  # eps_in_sqrt=True
        assert default is not None and not np.allclose(optax_steps(w), inside, rtol=0, atol=1e-12)


#: Keras 3's own RMSprop, on the JAX backend in a fresh process (this one's Keras runs the torch backend): the
#: variable after each of the given gradients, in float32.
_KERAS3_RMSPROP = r"""
import json, sys
import numpy as np
import keras
spec = json.loads(sys.argv[1])
assert keras.backend.backend() == "jax", keras.backend.backend()
opt = keras.optimizers.RMSprop(learning_rate=spec["learning_rate"], rho=spec["rho"], epsilon=spec["epsilon"])
var = keras.Variable(np.asarray(spec["p0"], "float32"))
opt.build([var])
out = []
for g in spec["grads"]:
    opt.apply([keras.ops.convert_to_tensor(np.asarray(g, "float32"))], [var])
    out.append(np.asarray(var.value).tolist())
print("RESULT " + json.dumps(out))
"""


@needs_flax
@pytest.mark.framework
@pytest.mark.skipif(not has("keras"), reason="keras not installed")
def test_plain_jax_tuning_rmsprop_steps_as_keras_3s_rmsprop():
    """The tuning suite's plain-JAX optimizer takes Keras 3's RMSprop, values and rule: each update equals Keras
    3.15.1's own ``RMSprop`` (epsilon inside the root, keras/src/optimizers/rmsprop.py@v3.15.1:143-145) on the same
    gradients, run on Keras' JAX backend. Gradients of 1e-4 make epsilon (1e-7) matter: the old optimizer,
    ``eps_in_sqrt=False`` (sqrt(v) + eps, Keras 2.0.8's and torch's form), moves those weights ~10x further."""
    import json
    import os
    import subprocess
    import sys

    import jax.numpy as jnp
    import optax

    from bench.models.engines.jax.epochs import make_optimizer

    w = get_workload("mnist_cnn_tuning")
    spec = w.optimizer.for_engine("jax")
    grads = [[1e-4, -2e-4, 0.3, -1.5], [-1e-4, 1e-4, 0.2, 2.0], [2e-4, 0.0, -0.1, 1.0]]
    p0 = [0.5, -0.25, 1.0, 0.0]
    args = {"learning_rate": spec.learning_rate, "rho": spec.rho, "epsilon": spec.epsilon, "p0": p0, "grads": grads}
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", _KERAS3_RMSPROP, json.dumps(args)], env=env, capture_output=True,
                          text=True, timeout=300)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, done.stderr[-2000:]
    keras3 = np.asarray(json.loads(lines[0][7:]), np.float32)

    def optax_steps(tx):
        p = jnp.asarray(p0, jnp.float32)
        state, out = tx.init(p), []
        for g in grads:
            updates, state = tx.update(jnp.asarray(g, jnp.float32), state, p)
            p = optax.apply_updates(p, updates)
            out.append(np.asarray(p))
        return np.asarray(out)

    tx, record = make_optimizer(optax, w)
    assert record["eps_in_sqrt"] is True and (record["decay"], record["eps"]) == (0.9, 1e-7)
    np.testing.assert_allclose(optax_steps(tx)[0], keras3[0], rtol=1e-6, atol=1e-9)  # one update
    np.testing.assert_allclose(optax_steps(tx), keras3, rtol=1e-6, atol=1e-9)  # and the next ones
    old = optax.rmsprop(spec.learning_rate, decay=spec.rho, eps=spec.epsilon, initial_scale=0.0, eps_in_sqrt=False)
    moved_old, moved = optax_steps(old)[0] - p0, keras3[0] - p0
    assert abs(moved_old[0]) > 5 * abs(moved[0])


@needs_flax
@pytest.mark.framework
def test_optax_adam_differs_from_keras_208_only_by_where_eps_goes():
    w = get_workload("babi_rnn")
    np.testing.assert_allclose(optax_steps(w), reference(w), rtol=0, atol=1e-6)


@needs_flax
@pytest.mark.framework
def test_optimizer_record_names_what_was_built():
    import optax

    from bench.models.engines.jax.epochs import make_optimizer

    _, rec = make_optimizer(optax, get_workload("cifar10_cnn"))
    assert rec == {"name": "optax.rmsprop", "learning_rate": 1e-4, "decay": 0.9, "eps": 1e-8, "eps_in_sqrt": False,
                   "initial_scale": 0.0,
                   "lr_schedule": {"class": "callable", "rule": "lr / (1 + decay * t)", "decay": 1e-6}}
    _, rec = make_optimizer(optax, get_workload("babi_rnn"))
    assert rec["name"] == "optax.adam" and "after the bias correction" in rec["note"]


# ---- the augmentation --------------------------------------------------------------------------------------

def test_jax_augmentation_is_the_source_transform_with_its_shift_distribution():
    """Each augmented image is the source's: scipy's ``affine_transform(order=0, mode='nearest')`` of the image by
    the integer shift it drew (ImageDataGenerator.apply_transform@2.0.8), flipped or not; shifts within
    round(0.1 * 32) = 3 pixels and both flips occur."""
    from scipy import ndimage

    from bench.models.engines.jax.data import augment_images
    from bench.models.workloads.cifar10_cnn.spec import CIFAR10_AUGMENTATION as aug

    rng = np.random.default_rng(3)
    images = rng.random((64, 32, 32, 3)).astype(np.float32)
    out = augment_images(np.random.default_rng(0), images, aug)
    assert out.shape == images.shape and out.dtype == images.dtype
    shifts, flips = set(), set()
    for img, got in zip(images, out, strict=True):
        match = None
        for flip in (False, True):
            cand = got[:, ::-1] if flip else got
            for dy in range(-3, 4):
                for dx in range(-3, 4):
                    want = np.stack([ndimage.affine_transform(img[..., c], np.eye(2), offset=(dy, dx), order=0,
                                                              mode="nearest") for c in range(3)], -1)
                    if np.array_equal(cand, want):
                        match = (dy, dx, flip)
        assert match is not None
        shifts.add(match[:2])
        flips.add(match[2])
    assert flips == {False, True} and len(shifts) > 20


def test_augmented_batches_are_full_shuffled_batches_from_one_queued_thread():
    from bench.models.engines.jax.data import AugmentedBatches
    from bench.models.workloads.cifar10_cnn.spec import CIFAR10_AUGMENTATION as aug

    images = np.arange(100, dtype=np.float32)[:, None, None, None] * np.ones((1, 8, 8, 1), np.float32)
    labels = np.arange(100, dtype=np.int32)
    loader = AugmentedBatches(aug, images, labels, 32, epochs=2)
    try:
        assert (loader.steps, len(loader.threads), loader.queue.maxsize) == (3, 1, 10)
        seen = []
        for _ in range(2):
            batches = list(loader.epoch())
            assert [len(y) for _, y in batches] == [32, 32, 32]
            ys = np.concatenate([y for _, y in batches])
            assert len(set(ys)) == 96
            for (x,), y in batches:  # each image's label travels with it (shifts with edge fill keep its value)
                np.testing.assert_array_equal(x[:, 4, 4, 0], y.astype(np.float32))
            seen.append(ys)
        assert not np.array_equal(seen[0], seen[1])
    finally:
        loader.close()


# ---- fit: learning, records, knobs in effect ---------------------------------------------------------------

def _fit(name: str, epochs: int = 2, **kw):
    from bench.models.engines.jax import epochs as jax_epochs

    w = get_workload(name)
    ds = w.load_data("smoke", "synthetic")
    cell = engine_cell("jax", w, epochs, w.batch_for("smoke"))
    return _blocks(jax_epochs.fit(JAX, w, ds, cell, JaxEpochSettings(**kw)))


def _blocks(out) -> dict:
    """An engine's EpochResult as the record's JSON blocks (what the worker writes: each block's model_dump)."""
    blocks = {"settings": out.settings, "metrics": out.metrics, "model": out.model, "memory": out.memory}
    return {"history": out.history, **{k: b.model_dump(exclude_unset=True) for k, b in blocks.items()}}


@needs_flax
@needs_torch
@pytest.mark.framework
def test_jax_learns_like_pytorch_on_the_same_smoke_data():
    """mnist_mlp, 4 epochs on the same synthetic smoke data: the loss falls on both stacks, the final losses are
    within 10 % and the final training accuracies within 0.15 of each other (Keras' glorot initialisation starts
    the Flax model at a higher loss than torch's default initialisation)."""
    from bench.models.engines.torch import epochs as torch_epochs

    w = get_workload("mnist_mlp")
    ds = w.load_data("smoke", "synthetic")
    j = _fit("mnist_mlp", epochs=4)
    t = _blocks(torch_epochs.fit(STACKS["pytorch"], w, ds, engine_cell("pytorch", w, 4, 128), TorchEpochSettings()))
    for h in (j["history"], t["history"]):
        assert h["loss"][-1] < h["loss"][0]
    assert abs(j["history"]["loss"][-1] - t["history"]["loss"][-1]) < 0.1 * t["history"]["loss"][-1]
    assert abs(j["history"]["accuracy"][-1] - t["history"]["accuracy"][-1]) < 0.15
    assert j["model"]["params_total"] == t["model"]["params_effective"] == 669_706
    # where each made its batches, as the Keras-overhead rows compare it: both hold the set on the device
    assert t["settings"]["train_data_placement"].startswith("device (torch tensors")


@needs_flax
@pytest.mark.framework
def test_jit_off_runs_op_by_op_and_trains_the_same_model():
    """jit_compile=False: the same step run op by op gives the same history (same seeds, same batches)."""
    on, off = _fit("mnist_mlp"), _fit("mnist_mlp", jit_compile=False)
    assert (on["settings"]["jit_compile"], off["settings"]["jit_compile"]) == (True, False)
    assert off["settings"]["donated_state"] is False
    np.testing.assert_allclose(off["history"]["loss"], on["history"]["loss"], rtol=1e-4)


@needs_flax
@pytest.mark.framework
def test_settings_in_effect_are_recorded_true():
    import flax
    import jax
    import optax

    out = _fit("mnist_cnn_tuning", precision="bfloat16", data_pipeline="device_put_once", sync="step", tf32="off")
    s = out["settings"]
    assert (s["jax_version"], s["flax_version"], s["optax_version"]) == (jax.__version__, flax.__version__,
                                                                       optax.__version__)
    assert (s["precision"], s["compute_dtype"], s["param_dtype"]) == ("bfloat16", "bfloat16", "float32")
    assert s["data_pipeline"] == "device_put_once" and s["train_data_placement"].startswith("device")
    assert s["jax_default_matmul_precision"] == "highest"  # tf32=off, read back from jax.config
    assert jax.config.jax_default_matmul_precision == "highest"
    jax.config.update("jax_default_matmul_precision", None)
    assert s["optimizer"]["name"] == "optax.rmsprop" and s["augment"] is False
    m = out["metrics"]
    assert m["steps_per_epoch"] == 4 and m["clock_reads"] == 2 * 4 + 2  # sync=step: one read per step
    assert out["memory"]["device_peak_bytes"] is None  # CPU, as keras3-jax records it
    assert out["model"] == {"params_total": 563_018, "params_effective": 563_018, "params_trainable": 563_018}
    assert all(np.isfinite(out["history"]["loss"]))


@needs_flax
@pytest.mark.framework
def test_bfloat16_computes_in_bfloat16_with_float32_parameters():
    """The bfloat16 step's parameters stay float32 while its logits differ from the float32 step's by bfloat16's
    rounding, as Flax layers with dtype=bfloat16, param_dtype=float32 give."""
    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx

    from bench.models.engines.jax.epochs import make_optimizer, make_steps

    w = get_workload("mnist_mlp")
    model = w.build_flax({"num_classes": 10}, nnx.Rngs(params=0, dropout=1))
    model.eval()
    gdef, params, rest = nnx.split(model, nnx.Param, ...)
    tx, _ = make_optimizer(optax, w)
    x, y = np.random.default_rng(0).random((8, 784)).astype(np.float32), np.arange(8) % 10
    totals = {}
    for precision in ("float32", "bfloat16"):
        train, evaluate = make_steps(jax, nnx, optax, (gdef, gdef), tx, precision, jit=False)
        totals[precision] = np.asarray(evaluate(params, rest, (x,), y))
        new_params, *_ = train(params, tx.init(params), rest, (x,), y)
        assert {a.dtype for a in jax.tree.leaves(new_params)} == {jnp.dtype("float32")}
    assert totals["bfloat16"][0] != totals["float32"][0]
    np.testing.assert_allclose(totals["bfloat16"][0], totals["float32"][0], rtol=2e-2)


def test_every_pytorch_pipeline_names_where_it_makes_its_batches():
    from bench.models.engines.torch.data import placement

    assert placement("tensors_on_device", False).startswith("device")
    assert placement("tensor_dataset", False).startswith("host")
    assert placement("tensor_dataset", True).startswith("device")
    assert placement("torchvision_dataset_transforms", False).startswith("host")
    with pytest.raises(ValueError, match="unknown data_pipeline"):
        placement("x", False)

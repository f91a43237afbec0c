"""The Flax NNX twins of mnist_hierarchical_rnn, cifar10_cnn and babi_rnn (their folders' models.py):
Keras' outputs with Keras' weights, Keras 2.0.8's LSTM step and initialisation, finite logits of the right shape,
dropout switched by train()/eval(), and learning under nnx.jit with optax (their parameter counts:
tests/contract/test_parity.py)."""

import importlib.util

import numpy as np
import pytest

from bench.models import datasets
from bench.models.workloads import get_workload
from tests.conftest import needs_keras_torch

needs_flax = pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in ("jax", "flax", "optax")),
                                reason="jax, flax and optax not installed")
pytestmark = [pytest.mark.framework, needs_flax]

NAMES = ["mnist_hierarchical_rnn", "cifar10_cnn", "babi_rnn"]


def builder(name):
    return get_workload(name).build_flax


def build(name, seed=0):
    from flax import nnx

    w = get_workload(name)
    return builder(name)(datasets.SYNTHETIC[w.dataset]["meta"], nnx.Rngs(seed))


def batch(name, n, seed=0):
    """``n`` synthetic examples in the Dataset's (Keras') layout, and their labels."""
    w = get_workload(name)
    ds = datasets.synthetic(w.dataset, n, 1, "test", seed=seed)
    ds = w.prepare(ds) if w.prepare else ds
    return ds.x_train, ds.y_train, ds.meta


def test_importing_the_builders_imports_no_framework():
    """The registry (and this module) import no framework: builders import Flax inside."""
    import subprocess
    import sys

    code = ("import sys, bench.models.workloads, bench.models.workloads.flax_common\n"
            "bad = [m for m in ('jax', 'flax', 'optax', 'torch', 'keras', 'tensorflow') if m in sys.modules]\n"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("name", NAMES)
def test_forward_gives_finite_logits_and_dropout_follows_train_eval(name):
    import jax.numpy as jnp

    model = build(name)
    xs, _, meta = batch(name, 3)
    xs = [jnp.asarray(x) for x in xs]
    model.eval()
    out = model(*xs)
    assert out.shape == (3, meta["num_classes"]) and out.dtype == jnp.float32
    assert bool(jnp.isfinite(out).all())
    np.testing.assert_array_equal(np.asarray(model(*xs)), np.asarray(out))  # eval: deterministic
    model.train()
    a, b = model(*xs), model(*xs)
    assert bool(jnp.isfinite(a).all())
    if name == "mnist_hierarchical_rnn":  # no dropout in the script
        np.testing.assert_allclose(np.asarray(a), np.asarray(out), rtol=1e-6)
    else:
        assert not np.allclose(np.asarray(a), np.asarray(b))  # a fresh dropout mask per call


def _keras_weights_from_flax(name, kmodel, fmodel):
    """Copy the Flax model's weights into the Keras model (same layouts: fused i,f,c,o LSTM kernels, HWIO convs,
    (in, out) dense kernels, NHWC flatten)."""
    import keras

    L = keras.layers
    a = np.asarray

    def lstm(rnn):
        return [a(rnn.cell.dense_i.kernel[...]), a(rnn.cell.dense_h.kernel[...]), a(rnn.cell.dense_h.bias[...])]

    def dense(layer):
        return [a(layer.kernel[...]), a(layer.bias[...])]

    layers = [la for la in kmodel.layers if la.weights]
    story_maxlen = datasets.SYNTHETIC["babi"]["meta"]["story_maxlen"]
    if name == "mnist_hierarchical_rnn":
        row, col, head = layers
        row.set_weights(lstm(fmodel.row_lstm))
        col.set_weights(lstm(fmodel.col_lstm))
        head.set_weights(dense(fmodel.head))
    elif name == "cifar10_cnn":
        convs = [la for la in layers if isinstance(la, L.Conv2D)]
        hidden, head = [la for la in layers if isinstance(la, L.Dense)]
        for k, f in zip(convs, fmodel.convs, strict=True):
            k.set_weights(dense(f))
        hidden.set_weights(dense(fmodel.hidden))
        head.set_weights(dense(fmodel.head))
    else:
        for la in layers:
            long_input = la.input.shape[1] == story_maxlen  # the story's layers, not the question's
            if isinstance(la, L.Embedding):
                la.set_weights([a((fmodel.story_emb if long_input else fmodel.query_emb).embedding[...])])
            elif isinstance(la, L.LSTM):
                la.set_weights(lstm(fmodel.story_lstm if long_input else fmodel.query_lstm))
            else:
                la.set_weights(dense(fmodel.head))


@needs_keras_torch
@pytest.mark.parametrize("name", NAMES)
def test_same_outputs_as_the_keras_model_with_its_weights(name, monkeypatch):
    """softmax(Flax logits) equals the Keras definition's probabilities (its folder's models.py, lstm_2017's hard
    sigmoid) with the same weights: same layers, padding, pooling, flatten order, gate order and activations."""
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    import jax
    import jax.numpy as jnp
    import keras

    w = get_workload(name)
    fmodel = build(name, seed=1)
    xs, _, meta = batch(name, 2, seed=3)
    kmodel = w.build_keras(keras, meta)
    _keras_weights_from_flax(name, kmodel, fmodel)
    fmodel.eval()
    ours = np.asarray(jax.nn.softmax(fmodel(*[jnp.asarray(x) for x in xs]), axis=-1))
    theirs = keras.ops.convert_to_numpy(kmodel(list(xs) if len(xs) > 1 else xs[0], training=False))
    np.testing.assert_allclose(ours, theirs, rtol=2e-4, atol=1e-6)


def _keras208_lstm_step(x, h, c, kernel, recurrent, bias):
    """Keras 2.0.8's LSTM step (keras/layers/recurrent.py@2.0.8:1136-1175, implementation 2), in NumPy, float64."""
    hard_sigmoid = lambda v: np.clip(0.2 * v + 0.5, 0.0, 1.0)  # noqa: E731  (tensorflow_backend.py@2.0.8:2850-2853)
    u = h.shape[-1]
    z = x @ kernel + h @ recurrent + bias
    i, f, o = hard_sigmoid(z[:, :u]), hard_sigmoid(z[:, u:2 * u]), hard_sigmoid(z[:, 3 * u:])
    c = f * c + i * np.tanh(z[:, 2 * u:3 * u])
    return o * np.tanh(c), c, z


def test_lstm_step_is_keras_2_0_8s():
    """One step of ``keras208_lstm``'s cell, and a whole sequence through ``lstm_last_state``, equal a NumPy reference
    of Keras 2.0.8's equations with the same weights; the inputs drive gates both into the clipped and the linear
    parts of the hard sigmoid."""
    import jax.numpy as jnp
    from flax import nnx

    from bench.models.workloads.flax_common import keras208_lstm, lstm_last_state

    n_in, u, b, t = 3, 4, 5, 6
    rng = np.random.default_rng(0)
    rnn = keras208_lstm(n_in, u, nnx.Rngs(0))
    cell = rnn.cell
    weights = [rng.normal(0, 1.0, s).astype(np.float32) for s in [(n_in, 4 * u), (u, 4 * u), (4 * u,)]]
    cell.dense_i.kernel[...], cell.dense_h.kernel[...], cell.dense_h.bias[...] = (jnp.asarray(v) for v in weights)
    x, h, c = (rng.normal(0, 1.5, s).astype(np.float32) for s in [(b, n_in), (b, u), (b, u)])

    (c1, h1), out = cell((jnp.asarray(c), jnp.asarray(h)), jnp.asarray(x))
    ref_h, ref_c, z = _keras208_lstm_step(*(v.astype(np.float64) for v in (x, h, c, *weights)))
    gates = np.concatenate([z[:, :2 * u], z[:, 3 * u:]], axis=1)
    assert (np.abs(gates) > 2.5).any() and (np.abs(gates) < 2.5).any()  # both branches of the hard sigmoid
    np.testing.assert_allclose(np.asarray(c1), ref_c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(h1), ref_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(h1))

    seq = rng.normal(0, 1.5, (b, t, n_in)).astype(np.float32)
    ref_h, ref_c = np.zeros((b, u)), np.zeros((b, u))
    for step in range(t):
        ref_h, ref_c, _ = _keras208_lstm_step(seq[:, step].astype(np.float64), ref_h, ref_c,
                                              *(v.astype(np.float64) for v in weights))
    np.testing.assert_allclose(np.asarray(lstm_last_state(rnn, jnp.asarray(seq))), ref_h, rtol=1e-5, atol=1e-6)


def test_lstm_initialisation_is_keras_2_0_8s():
    """glorot_uniform input kernel over the fused (in, 4u) shape, orthogonal recurrent kernel over (u, 4u) (rows
    orthonormal), bias zero but the forget block one (keras/layers/recurrent.py@2.0.8:973-976, 1024-1042)."""
    from flax import nnx

    from bench.models.workloads.flax_common import keras208_lstm

    n_in, u = 50, 50
    cell = keras208_lstm(n_in, u, nnx.Rngs(0)).cell
    kernel, recurrent = np.asarray(cell.dense_i.kernel[...]), np.asarray(cell.dense_h.kernel[...])
    bias = np.asarray(cell.dense_h.bias[...])
    limit = np.sqrt(6.0 / (n_in + 4 * u))
    assert kernel.shape == (n_in, 4 * u) and np.abs(kernel).max() <= limit
    assert np.abs(kernel).max() > 0.95 * limit and abs(kernel.std() - limit / np.sqrt(3)) < 0.05 * limit  # U(+-limit)
    np.testing.assert_allclose(recurrent @ recurrent.T, np.eye(u), atol=1e-5)
    np.testing.assert_array_equal(bias, np.concatenate([np.zeros(u), np.ones(u), np.zeros(2 * u)]))


def test_dense_conv_and_embedding_initialisation_is_keras_2_0_8s():
    """Dense and Conv2D: glorot_uniform kernels (conv fans over 3x3 x channels), zero biases; Embedding U(-0.05, 0.05)
    (keras/layers/core.py@2.0.8:796, convolutional.py@2.0.8:92, embeddings.py@2.0.8:71, initializers.py@2.0.8:100)."""
    cifar = build("cifar10_cnn")
    conv = np.asarray(cifar.convs[3].kernel[...])
    limit = np.sqrt(6.0 / (9 * 64 + 9 * 64))
    assert conv.shape == (3, 3, 64, 64) and limit * 0.95 < np.abs(conv).max() <= limit
    hidden = np.asarray(cifar.hidden.kernel[...])
    assert np.abs(hidden).max() <= np.sqrt(6.0 / (2304 + 512))
    assert not np.asarray(cifar.hidden.bias[...]).any() and not np.asarray(cifar.convs[0].bias[...]).any()
    emb = np.asarray(build("babi_rnn").story_emb.embedding[...])
    assert np.abs(emb).max() <= 0.05 and emb.min() < -0.04 and emb.max() > 0.04


def _optax(spec):
    """The workload's OptimizerSpec, simply (no Keras-2 decay): Keras 2.0.8's epsilon sits outside the root."""
    import optax

    if spec.name == "rmsprop":
        return optax.rmsprop(spec.learning_rate, decay=spec.rho, eps=spec.epsilon, eps_in_sqrt=False)
    if spec.name == "adam":
        return optax.adam(spec.learning_rate, b1=spec.beta_1, b2=spec.beta_2, eps=spec.epsilon)
    raise AssertionError(f"no simple mapping for {spec.name}")


@pytest.mark.parametrize("name", NAMES)
def test_a_few_jitted_optax_steps_lower_the_loss(name):
    """Learning works: a few nnx.jit train steps (dropout on) with the workload's optimizer lower the loss of a fixed
    small batch, measured in eval mode before and after."""
    import jax.numpy as jnp
    import optax
    from flax import nnx

    w = get_workload(name)
    model = build(name)
    xs, y, _ = batch(name, 8, seed=5)
    xs, y = tuple(jnp.asarray(x) for x in xs), jnp.asarray(y)
    optimizer = nnx.Optimizer(model, _optax(w.optimizer), wrt=nnx.Param)

    def loss_fn(m):
        return optax.softmax_cross_entropy_with_integer_labels(m(*xs), y).mean()

    @nnx.jit
    def train_step(m, opt):
        loss, grads = nnx.value_and_grad(loss_fn)(m)
        opt.update(m, grads)
        return loss

    eval_loss = nnx.jit(loss_fn)
    model.eval()
    before = float(eval_loss(model))
    model.train()
    losses = [float(train_step(model, optimizer)) for _ in range(8)]
    model.eval()
    after = float(eval_loss(model))
    assert np.isfinite(losses).all() and after < before - 0.01, (before, losses, after)

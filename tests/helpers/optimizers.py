"""Keras 2.0.8's optimizer update rules (keras/optimizers.py@2.0.8), transcribed in NumPy, and the gradients every
engine's optimizer is stepped through to be compared with them."""

from __future__ import annotations

import dataclasses

import numpy as np

from bench.models.workloads import get_workload


def rmsprop_208(grads, p, lr, rho, eps, decay, eps_inside=False):
    """keras/optimizers.py@2.0.8:231-239: a = rho a + (1 - rho) g^2; p -= lr_t g / (sqrt(a) + eps), lr_t = lr / (1 +
    decay t). ``eps_inside``: the rule Keras 3 and tf.keras use instead (g / sqrt(a + eps))."""
    a = np.zeros_like(p)
    for t, g in enumerate(grads):
        lr_t = lr / (1.0 + decay * t)
        a = rho * a + (1 - rho) * g * g
        p = p - lr_t * g / (np.sqrt(a + eps) if eps_inside else np.sqrt(a) + eps)
    return p


def adadelta_208(grads, p, lr, rho, eps):
    """keras/optimizers.py@2.0.8:356-366: a = rho a + (1 - rho) g^2; u = g sqrt(d + eps) / sqrt(a + eps);
    p -= lr u; d = rho d + (1 - rho) u^2."""
    a, d = np.zeros_like(p), np.zeros_like(p)
    for g in grads:
        a = rho * a + (1 - rho) * g * g
        u = g * np.sqrt(d + eps) / np.sqrt(a + eps)
        p = p - lr * u
        d = rho * d + (1 - rho) * u * u
    return p


def adam_208(grads, p, lr, b1, b2, eps):
    """keras/optimizers.py@2.0.8:422-434: lr_t = lr sqrt(1 - b2^t) / (1 - b1^t); p -= lr_t m / (sqrt(v) + eps)."""
    m, v = np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr_t * m / (np.sqrt(v) + eps)
    return p


GRADS = [np.array([0.3, -2.0, 1e-3, 5.0]), np.array([-0.1, 1.5, 2e-3, -4.0]), np.array([0.2, 0.5, -1e-3, 3.0])]
P0 = np.array([1.0, -1.0, 0.5, 0.0])


def with_decay(name: str, decay: float):
    """Workload ``name`` with its optimizer's learning-rate decay set to ``decay``."""
    w = get_workload(name)
    return dataclasses.replace(w, optimizer=dataclasses.replace(w.optimizer, decay=decay))


def reference(w) -> np.ndarray:
    """Parameters ``P0`` after ``GRADS``, stepped by 2.0.8's rule for ``w``'s optimizer (rmsprop, adadelta or adam)."""
    o = w.optimizer
    if o.name == "rmsprop":
        return rmsprop_208(GRADS, P0, o.learning_rate, o.rho, o.epsilon, o.decay)
    if o.name == "adadelta":
        return adadelta_208(GRADS, P0, o.learning_rate, o.rho, o.epsilon)
    return adam_208(GRADS, P0, o.learning_rate, o.beta_1, o.beta_2, o.epsilon)

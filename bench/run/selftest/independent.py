"""The independent side of the self-test, per framework: device-side step timing that does not go through the
harness's barrier, and float32 matmuls, convolutions and (PyTorch) recurrent layers whose results are compared
with a float64 reference. Call only inside a child process that has imported the framework.

Timing: PyTorch on a GPU reads CUDA events recorded on the stream around the work (``torch.cuda.Event``:
device-side time, no host barrier); on a CPU its kernels run synchronously, so ``time.perf_counter`` around the
call is the work's time. JAX blocks on the call's own output (``block_until_ready``), TensorFlow reads one
element of the output back to the host (a device-to-host copy waits for the op that produced it); both around
``time.perf_counter``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np


def _wait(backend: str, out: Any) -> None:
    """Block until ``out`` (one call's result) exists: JAX ``block_until_ready``, TensorFlow a device-to-host read
    of one element (PyTorch on CPU: nothing to wait for)."""
    if backend == "jax":
        out.block_until_ready()
    elif backend == "tensorflow":
        import tensorflow as tf

        tf.reshape(out, [-1])[0].numpy()


def step_times_s(backend: str, call: Callable[[], Any], steps: int, device: str) -> list[float]:
    """Each of ``steps`` calls' duration (s), timed independently of the harness (module doc)."""
    if backend == "torch" and device == "gpu":
        import torch

        pairs = []
        for _ in range(steps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            pairs.append((start, end))
        torch.cuda.synchronize()
        return [s.elapsed_time(e) / 1000.0 for s, e in pairs]
    out = []
    for _ in range(steps):
        t0 = time.perf_counter()
        _wait(backend, call())
        out.append(time.perf_counter() - t0)
    return out


def throughput_s(backend: str, call: Callable[[], Any], reps: int, device: str) -> float:
    """Seconds for ``reps`` back-to-back calls, timed independently: CUDA events around all of them (PyTorch on a
    GPU), else ``perf_counter`` from the first call until every kept output is ready (JAX: ``block_until_ready``;
    TensorFlow: one element of each read back; PyTorch on a CPU: its calls are synchronous)."""
    if backend == "torch" and device == "gpu":
        import torch

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            call()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000.0
    t0 = time.perf_counter()
    outs = [call() for _ in range(reps)]
    for o in outs:
        _wait(backend, o)
    return time.perf_counter() - t0


def matmul32(backend: str, a: np.ndarray, b: np.ndarray, device: str) -> np.ndarray:
    """``a @ b`` in float32 on ``device`` with the framework's default op (its TF32 switches decide the math)."""
    if backend == "torch":
        import torch

        dev = "cuda" if device == "gpu" else "cpu"
        return (torch.from_numpy(a).to(dev) @ torch.from_numpy(b).to(dev)).cpu().numpy()
    if backend == "jax":
        import jax
        import jax.numpy as jnp

        d = jax.devices(device)[0]
        return np.asarray(jnp.matmul(jax.device_put(a, d), jax.device_put(b, d)))
    import tensorflow as tf

    with tf.device("/GPU:0" if device == "gpu" else "/CPU:0"):
        return tf.matmul(tf.constant(a), tf.constant(b)).numpy()


def conv32(backend: str, x: np.ndarray, k: np.ndarray, device: str) -> np.ndarray:
    """A VALID, stride-1 2-D convolution in float32 on ``device``: ``x`` NHWC, ``k`` HWIO; returns NHWC."""
    if backend == "torch":
        import torch

        dev = "cuda" if device == "gpu" else "cpu"
        xt = torch.from_numpy(x).to(dev).permute(0, 3, 1, 2)
        kt = torch.from_numpy(k).to(dev).permute(3, 2, 0, 1)
        return torch.nn.functional.conv2d(xt, kt).permute(0, 2, 3, 1).cpu().numpy()
    if backend == "jax":
        import jax

        d = jax.devices(device)[0]
        out = jax.lax.conv_general_dilated(jax.device_put(x, d), jax.device_put(k, d), (1, 1), "VALID",
                                           dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return np.asarray(out)
    import tensorflow as tf

    with tf.device("/GPU:0" if device == "gpu" else "/CPU:0"):
        return tf.nn.conv2d(tf.constant(x), tf.constant(k), strides=1, padding="VALID").numpy()


def conv64(x: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The float64 reference of ``conv32`` (NumPy: every window times the kernel)."""
    kh, kw, c, o = k.shape
    win = np.lib.stride_tricks.sliding_window_view(x.astype(np.float64), (kh, kw), axis=(1, 2))  # N H W C kh kw
    return np.tensordot(win, k.astype(np.float64).transpose(2, 0, 1, 3), axes=([3, 4, 5], [0, 1, 2]))


def lstm_rel_error(seed: int, device: str) -> float:
    """PyTorch only: relative error of a float32 ``nn.LSTM`` on ``device`` (cuDNN's RNN kernels on a GPU) against
    the same weights in float64 on the CPU."""
    import torch

    torch.manual_seed(seed)
    ref = torch.nn.LSTM(256, 512, batch_first=True).double()
    x = torch.randn(16, 32, 256, dtype=torch.float64)
    want = ref(x)[0]
    dev = "cuda" if device == "gpu" else "cpu"
    got = ref.float().to(dev)(x.float().to(dev))[0].cpu().double()
    return rel_error(got.detach().numpy(), want.detach().numpy())


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    """||got - want||_F / ||want||_F, in float64."""
    w = want.astype(np.float64)
    return float(np.linalg.norm(got.astype(np.float64) - w) / np.linalg.norm(w))

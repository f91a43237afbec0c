"""Per-framework adapters: GPUs seen, a GPU matmul, a GEMM call, the TF32 switches, peak device memory and the device
barrier, one class per framework (``TensorFlow``, ``Jax``, ``Torch``) behind ``Framework``, as Zeus keeps each GPU
vendor behind one class. ``framework(backend)`` picks one; the module-level functions here are the adapter calls
by backend name (the GEMM benchmark is ``bench.run.engines.gemm``, the TF32 knob and its interpretation
``bench.run.engines.math_mode``). Each method imports its framework lazily: call them only inside a cell or probe
process.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

#: JAX GEMM results kept in flight while the host waits for the oldest (``Jax.run_and_wait``).
GEMM_IN_FLIGHT = 2



class Framework(ABC):
    """One array framework as the harness uses it. ``module``: its import name."""

    module = ""

    def import_module(self) -> None:
        """Import the framework (ImportError when the image lacks it)."""
        importlib.import_module(self.module)

    @abstractmethod
    def gpu_devices(self) -> list[str]:
        """Names of the GPUs the framework itself can use (empty when none)."""

    @abstractmethod
    def gpu_matmul(self, a) -> float:
        """Sum of ``a @ a`` (a NumPy float32 matrix) computed on the framework's first GPU."""

    def run_and_wait(self, call: Callable[[], Any], reps: int, device: str) -> None:
        """Call ``call`` ``reps`` times and return once the device has finished the work of every call.

        Default: the calls' results are dropped and the device barrier (``barrier``) follows, which waits for
        every kernel queued on the device, these calls' included (TensorFlow's ``sync_devices``,
        ``torch.cuda.synchronize``; their CPU kernels run synchronously).
        """
        for _ in range(reps):
            call()
        self.barrier(device)()

    @abstractmethod
    def gemm_call(self, dtype: str, n: int, device: str) -> Callable[[], Any]:
        """A call that runs one n x n x n matmul of random inputs in ``dtype`` on ``device`` (the inputs
        already placed there) and returns its result."""

    @abstractmethod
    def set_tf32(self, enabled: bool) -> None:
        """Set the framework's TF32 switches for float32 matmuls and convolutions on (True) or off (False)."""

    @abstractmethod
    def tf32_switches(self) -> dict[str, Any]:
        """The framework's TF32 switches as they are now (record keys -> values; see
        ``bench.run.engines.math_mode.TF32_SWITCHES``)."""

    @abstractmethod
    def peak_bytes(self) -> int | None:
        """Peak GPU memory the framework allocated in this process (bytes), None when it has no counter."""

    @abstractmethod
    def barrier(self, device: str) -> Callable[[], None]:
        """A function that blocks until all queued work on ``device`` (``cpu`` or ``gpu``) is done."""


class TensorFlow(Framework):
    """TensorFlow: ``tf.config`` GPU list, TF32 switch and memory info; ``sync_devices`` as the barrier."""

    module = "tensorflow"

    def gpu_devices(self) -> list[str]:
        import tensorflow as tf

        return [d.name for d in tf.config.list_physical_devices("GPU")]

    def gpu_matmul(self, a) -> float:
        import tensorflow as tf

        with tf.device("/GPU:0"):
            return float(tf.reduce_sum(tf.matmul(a, a)).numpy())

    def gemm_call(self, dtype: str, n: int, device: str) -> Callable[[], Any]:
        import tensorflow as tf

        with tf.device("/GPU:0" if device == "gpu" else "/CPU:0"):
            a = tf.random.normal((n, n), dtype=dtype)
            b = tf.random.normal((n, n), dtype=dtype)
        mm = tf.function(tf.matmul)
        return lambda: mm(a, b)

    def set_tf32(self, enabled: bool) -> None:
        import tensorflow as tf

        tf.config.experimental.enable_tensor_float_32_execution(enabled)

    def tf32_switches(self) -> dict[str, Any]:
        """``tensor_float_32_execution_enabled()``: one switch for matmuls and convolutions (on by default)."""
        import tensorflow as tf

        return {"tf_tensor_float_32_execution": tf.config.experimental.tensor_float_32_execution_enabled()}

    def peak_bytes(self) -> int | None:
        import tensorflow as tf

        return int(tf.config.experimental.get_memory_info("GPU:0")["peak"])

    def barrier(self, device: str) -> Callable[[], None]:
        """``tf.test.experimental.sync_devices()``."""
        import tensorflow as tf

        return tf.test.experimental.sync_devices


class Jax(Framework):
    """JAX: ``jax.devices('gpu')``, ``jax_default_matmul_precision``, ``memory_stats``; ``block_until_ready``."""

    module = "jax"

    def gpu_devices(self) -> list[str]:
        import jax

        try:
            return [str(d) for d in jax.devices("gpu")]
        except RuntimeError:  # no GPU backend initialised
            return []

    def gpu_matmul(self, a) -> float:
        import jax

        x = jax.device_put(a, jax.devices("gpu")[0])
        return float((x @ x).sum())

    def run_and_wait(self, call: Callable[[], Any], reps: int, device: str) -> None:
        """JAX has no device-wide barrier: ``block_until_ready`` waits for the arrays it is given, and
        ``jax.live_arrays()`` (``barrier``) no longer holds a result the caller dropped. So each call's result
        is kept and blocked on, oldest first, with ``GEMM_IN_FLIGHT`` calls queued behind it (the device
        always has the next one while the host waits) and only that many results in memory."""
        import collections

        import jax

        pending: collections.deque = collections.deque()
        for _ in range(reps):
            pending.append(call())
            if len(pending) > GEMM_IN_FLIGHT:
                pending.popleft().block_until_ready()
        jax.block_until_ready(list(pending))

    def gemm_call(self, dtype: str, n: int, device: str) -> Callable[[], Any]:
        import jax
        import jax.numpy as jnp

        put = lambda x: jax.device_put(x, jax.devices(device)[0])  # noqa: E731
        ka, kb = jax.random.split(jax.random.key(0))
        a = put(jax.random.normal(ka, (n, n), dtype=dtype))  # random, as TF and torch: not all-ones bits
        b = put(jax.random.normal(kb, (n, n), dtype=dtype))
        mm = jax.jit(jnp.matmul)
        return lambda: mm(a, b)

    def set_tf32(self, enabled: bool) -> None:
        import jax

        jax.config.update("jax_default_matmul_precision", "tensorfloat32" if enabled else "highest")

    def tf32_switches(self) -> dict[str, Any]:
        """``jax_default_matmul_precision`` (matmuls and convolutions; None: DEFAULT, TF32 on a GPU that has it)."""
        import jax

        # jax's Config declares its flags at run time, so a type checker cannot see them
        return {"jax_default_matmul_precision": jax.config.jax_default_matmul_precision}  # type: ignore[attr-defined]

    def peak_bytes(self) -> int | None:
        import jax

        stats = jax.devices()[0].memory_stats() or {}
        return stats.get("peak_bytes_in_use")

    def barrier(self, device: str) -> Callable[[], None]:
        """``block_until_ready`` on every live array (JAX dispatches asynchronously on CPU too)."""
        import jax

        def jax_barrier() -> None:
            jax.block_until_ready(jax.live_arrays())

        return jax_barrier


class Torch(Framework):
    """PyTorch: ``torch.cuda`` devices, the matmul/cuDNN TF32 flags, ``max_memory_allocated``; ``synchronize``."""

    module = "torch"

    def gpu_devices(self) -> list[str]:
        import torch

        return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]

    def gpu_matmul(self, a) -> float:
        import torch

        x = torch.from_numpy(a).cuda()
        return float((x @ x).sum().item())

    def gemm_call(self, dtype: str, n: int, device: str) -> Callable[[], Any]:
        import torch

        dev = "cuda" if device == "gpu" else "cpu"
        a = torch.randn(n, n, device=dev, dtype=getattr(torch, dtype))
        b = torch.randn(n, n, device=dev, dtype=getattr(torch, dtype))
        return lambda: a @ b

    def set_tf32(self, enabled: bool) -> None:
        """``set_float32_matmul_precision('high'|'highest')`` (the same switch as ``cuda.matmul.allow_tf32`` in torch
        2.13: setting one rewrites the other) and ``cudnn.allow_tf32`` (convolutions and cuDNN RNNs); then, where
        torch has them (2.9 and later), every per-op ``fp32_precision`` switch to the same mode ('tf32' or 'ieee':
        ``torch_fp32_precision_switches``). The legacy pair alone leaves the cuDNN-wide
        ``torch.backends.cudnn.fp32_precision`` at 'none', and torch 2.13's inductor builds its Triton convolution
        kernels with ``ALLOW_TF32 = torch.backends.cudnn.fp32_precision == "tf32"`` (torch/_inductor/kernel/conv.py),
        so under torch.compile max-autotune such a kernel would run FP32 while cuDNN's ran TF32. The legacy
        switches are set first and kept consistent with the new ones, so code that still reads them (inductor's
        backward convolution templates read ``cudnn.allow_tf32``) gets an answer, not torch's "mix of legacy and
        new APIs" error."""
        import torch

        torch.set_float32_matmul_precision("high" if enabled else "highest")
        torch.backends.cudnn.allow_tf32 = enabled
        for switch in torch_fp32_precision_switches(torch).values():
            switch.fp32_precision = "tf32" if enabled else "ieee"

    def tf32_switches(self) -> dict[str, Any]:
        """The legacy switches (``allow_tf32``, ``float32_matmul_precision``) and, where torch has them, the per-op
        ``fp32_precision`` ones read through that API ('tf32', 'ieee', or 'none': inherited, no TF32 by itself). A
        legacy switch torch refuses to read (its "mix of legacy and new APIs" error, after a library set the new
        ones inconsistently) is None; the ``fp32_precision`` keys then still say what ran."""
        import torch

        def legacy(read: Callable[[], Any]) -> Any:
            try:
                return read()
            except RuntimeError:
                return None

        out = {"torch_matmul_allow_tf32": legacy(lambda: torch.backends.cuda.matmul.allow_tf32),
               "torch_cudnn_allow_tf32": legacy(lambda: torch.backends.cudnn.allow_tf32),
               "torch_float32_matmul_precision": legacy(torch.get_float32_matmul_precision)}
        out.update({key: switch.fp32_precision for key, switch in torch_fp32_precision_switches(torch).items()})
        return out

    def peak_bytes(self) -> int | None:
        import torch

        return int(torch.cuda.max_memory_allocated())

    def barrier(self, device: str) -> Callable[[], None]:
        """``torch.cuda.synchronize()`` on GPU; CPU kernels run synchronously, so a no-op there."""
        import torch

        if device == "gpu" and torch.cuda.is_available():
            return torch.cuda.synchronize
        return lambda: None


def torch_fp32_precision_switches(torch: Any) -> dict[str, Any]:
    """Record key -> the object whose ``fp32_precision`` is one of torch's per-op TF32 switches (torch 2.9 and
    later; empty where torch has none of them): float32 matmuls (``torch.backends.cuda.matmul``), cuDNN convolutions
    (``cudnn.conv``), cuDNN RNNs (``cudnn.rnn``), and the cuDNN-wide one (``torch.backends.cudnn``: what inductor's
    Triton convolution kernels follow, and what an op of the CUDA backend without its own setting inherits)."""
    cudnn = torch.backends.cudnn
    switches = {"torch_matmul_fp32_precision": torch.backends.cuda.matmul,
                "torch_cudnn_conv_fp32_precision": getattr(cudnn, "conv", None),
                "torch_cudnn_rnn_fp32_precision": getattr(cudnn, "rnn", None),
                "torch_cudnn_fp32_precision": cudnn}
    try:
        if all(s is not None and isinstance(s.fp32_precision, str) for s in switches.values()):
            return switches
    except AttributeError:  # an older torch: only the legacy switches
        pass
    return {}


FRAMEWORKS: dict[str, Framework] = {"tensorflow": TensorFlow(), "jax": Jax(), "torch": Torch()}


def framework(backend: str) -> Framework:
    """The framework of a stack's ``backend`` (``tensorflow``, ``jax`` or ``torch``).

    Raises:
        ValueError: unknown backend.
    """
    try:
        return FRAMEWORKS[backend]
    except KeyError:
        raise ValueError(f"unknown backend {backend!r}") from None


def make_barrier(backend: str, device: str) -> Callable[[], None]:
    """Return a function that blocks until all queued work of ``backend`` on ``device`` is done.

    Args:
        backend: ``tensorflow``, ``jax`` or ``torch``; the framework must already be importable.
        device: ``cpu`` or ``gpu``.

    TensorFlow: ``tf.test.experimental.sync_devices()``. JAX: ``block_until_ready`` on every live
    array (JAX dispatches asynchronously on CPU too). PyTorch: ``torch.cuda.synchronize()`` on GPU;
    CPU kernels run synchronously, so the barrier is a no-op there (``bench.run.engines.frameworks``).

    Raises:
        ValueError: unknown backend.
    """
    return framework(backend).barrier(device)


def gpu_devices(backend: str) -> list[str]:
    """Names of the GPUs the framework itself can use (empty when none)."""
    return framework(backend).gpu_devices()


def import_backend(backend: str) -> None:
    """Import the framework (ImportError when the image lacks it)."""
    framework(backend).import_module()


def device_peak_bytes(backend: str, device: str) -> int | None:
    """Peak device memory allocated by the framework in this process (bytes), None on CPU or unknown."""
    if device != "gpu":
        return None
    try:
        return framework(backend).peak_bytes()
    except Exception:  # a missing counter is recorded as null, never a failed cell
        return None


def hide_gpus_from_tensorflow() -> bool:
    """In a non-TensorFlow stack, keep TensorFlow off the GPU: when anything imports it (keras-hub through
    tensorflow-text, Keras' tf.data adapters, the paper suite's input pipelines), its GPUs are made
    invisible before it can initialise them, so it neither allocates GPU memory beside JAX or PyTorch
    nor competes for the device. Uses wrapt's post-import hook (installed with TensorFlow).

    Returns False when TensorFlow is not installed (nothing to hide), True once the hook is registered.
    """
    import importlib.util

    if importlib.util.find_spec("tensorflow") is None:
        return False
    import wrapt

    def hide(tf) -> None:
        tf.config.set_visible_devices([], "GPU")

    wrapt.register_post_import_hook(hide, "tensorflow")
    return True

"""Per-framework switches and read-outs: GPUs seen, a GPU matmul, GEMM throughput, TF32, peak device memory and
the device barrier, one class per framework (``TensorFlow``, ``Jax``, ``Torch``) behind ``Framework``, as
Zeus keeps each GPU vendor behind one class. ``framework(backend)`` picks one; the module-level functions
are the same calls by backend name. Each method imports its framework lazily: call them only inside a
cell or probe process.
"""

from __future__ import annotations

import importlib
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any


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
        """The framework's TF32 switches as they are now (record keys -> values; see ``TF32_SWITCHES``)."""

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
        2.13: setting one rewrites the other) and ``cudnn.allow_tf32`` (convolutions and cuDNN RNNs)."""
        import torch

        torch.set_float32_matmul_precision("high" if enabled else "highest")
        torch.backends.cudnn.allow_tf32 = enabled

    def tf32_switches(self) -> dict[str, Any]:
        import torch

        return {"torch_matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                "torch_cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
                "torch_float32_matmul_precision": torch.get_float32_matmul_precision()}

    def peak_bytes(self) -> int | None:
        import torch

        return int(torch.cuda.max_memory_allocated())

    def barrier(self, device: str) -> Callable[[], None]:
        """``torch.cuda.synchronize()`` on GPU; CPU kernels run synchronously, so a no-op there."""
        import torch

        if device == "gpu" and torch.cuda.is_available():
            return torch.cuda.synchronize
        return lambda: None


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


def gpu_matmul(backend: str) -> float:
    """One 256x256 float32 matmul on the framework's first GPU; returns the sum of the result.

    A real operation, so a PTX/driver mismatch fails here rather than in the first cell.
    """
    import numpy as np

    return framework(backend).gpu_matmul(np.ones((256, 256), np.float32))


#: JAX GEMM results kept in flight while the host waits for the oldest (``Jax.run_and_wait``).
GEMM_IN_FLIGHT = 2


def gemm_tflops(backend: str, dtype: str, n: int = 8192, reps: int = 30, device: str = "gpu") -> float:
    """Achieved dense GEMM throughput (TFLOP/s) of ``reps`` n x n matmuls of random inputs in ``dtype``
    (``bfloat16`` or ``float32``; whether float32 may use TF32 is the caller's ``set_tf32`` and
    NVIDIA_TF32_OVERRIDE), after 3 warm-up calls: 2 n^3 FLOP per call over the seconds from the first call
    until the device has finished every call's work (``Framework.run_and_wait``). The "measured peak"
    beside the datasheet's, as mamf-finder measures it (one large square shape here, not its search over
    shapes).
    """
    import time

    fw = framework(backend)
    call = fw.gemm_call(dtype, n, device)
    fw.run_and_wait(call, 3, device)
    t0 = time.perf_counter()
    fw.run_and_wait(call, reps, device)
    return 2.0 * n**3 * reps / (time.perf_counter() - t0) / 1e12


def tf32_state(backend: str) -> dict[str, Any]:
    """The process's ``NVIDIA_TF32_OVERRIDE`` and the framework's TF32 switches as they are now (record keys).

    Raises:
        ValueError: unknown backend.
    """
    return {"NVIDIA_TF32_OVERRIDE": os.environ.get("NVIDIA_TF32_OVERRIDE"), **framework(backend).tf32_switches()}


def set_tf32(backend: str, mode: str) -> dict[str, Any]:
    """Apply a cell's ``tf32`` knob (``bench.core.knobs.TF32_MODES``) and return ``tf32_state`` afterwards: ``default``
    touches nothing (each framework's shipped math mode: TensorFlow and JAX TF32 on, PyTorch matmul off and cuDNN
    on, as the sources ran), ``on``/``off`` set every switch of the framework. The runner sets
    ``NVIDIA_TF32_OVERRIDE=0`` for ``off`` (``knobs.tf32_override``). The worker reads ``tf32_state`` again when the
    cell ends, so the record holds the switches' final values (``tf32_math`` interprets them).

    Raises:
        ValueError: an unknown backend or mode.
    """
    fw = framework(backend)
    if mode not in ("default", "on", "off"):
        raise ValueError(f"tf32={mode!r}: expected default, on or off")
    if mode != "default":
        fw.set_tf32(mode == "on")
    return tf32_state(backend)


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


#: JAX precisions that let float32 matmuls and convolutions use TF32 on a GPU that has it (jax 0.10.2
#: ``jax/_src/lax/lax.py``, ``Precision``: DEFAULT and HIGH "use tensorfloat32 if available (e.g. on A100 and H100)";
#: HIGHEST, alias 'float32', "uses float32"). None is the shipped default: DEFAULT.
JAX_TF32_PRECISIONS = (None, "default", "fastest", "bfloat16", "high", "bfloat16_3x", "tensorfloat32")
#: Record key of each framework switch -> (op kinds it governs, values that allow TF32 there). A recurrent layer's
#: GEMMs are ``rnn_cudnn`` where it ran as cuDNN's RNN kernel, ``rnn_matmul`` where it ran as the framework's own
#: matmuls (``rnn_on_cudnn`` says which): on PyTorch ``cudnn.allow_tf32`` covers cuDNN's RNN kernels (torch 2.13
#: ``backends/cudnn/rnn.py`` ``fp32_precision`` follows it), ``allow_tf32`` / ``float32_matmul_precision`` the
#: matmuls; TensorFlow's one switch covers both; JAX's precision covers matmuls (no cell here runs a JAX cuDNN
#: RNN, so none is claimed for one).
TF32_SWITCHES: dict[str, tuple[tuple[str, ...], tuple[Any, ...]]] = {
    "tf_tensor_float_32_execution": (("matmul", "conv", "rnn_cudnn", "rnn_matmul"), (True,)),
    "jax_default_matmul_precision": (("matmul", "conv", "rnn_matmul"), JAX_TF32_PRECISIONS),
    "torch_matmul_allow_tf32": (("matmul", "rnn_matmul"), (True,)),
    "torch_cudnn_allow_tf32": (("conv", "rnn_cudnn"), (True,)),
}


def rnn_on_cudnn(engine: str, device: str) -> bool:
    """Whether the LSTMs of a cell of ``engine`` on ``device`` run as cuDNN's RNN kernel (else as the backend's
    matmuls, step by step). Only plain PyTorch's on a GPU: its workloads use ``nn.LSTM``, which takes cuDNN for CUDA
    float tensors while ``torch.backends.cudnn.enabled`` (torch 2.13 ``aten/src/ATen/native/RNN.cpp`` ``use_cudnn``;
    checked here). Every Keras stack builds its LSTMs as ``bench.run.workloads.classic.lstm_2017``, whose
    ``hard_sigmoid`` recurrent activation fails Keras' ``cudnn_ok`` on each backend (keras 3.15.1
    ``backend/{tensorflow,jax,torch}/rnn.py`` ``cudnn_ok`` want ``sigmoid``; tf-keras 2.21.0's
    ``layers/rnn/lstm.py:578-580`` ``_could_use_gpu_kernel`` too), so Keras runs its generic loop of the backend's
    matmuls. Plain JAX's Flax LSTMs are matmuls."""
    if engine != "torch" or device != "gpu":
        return False
    import torch

    return bool(torch.backends.cudnn.enabled and torch.backends.cudnn.is_available())


def tf32_math(effective: dict[str, Any], device: str, rnn_cudnn: bool) -> dict[str, bool]:
    """Whether a cell's float32 matmuls, convolutions and recurrent layers could run as TF32:
    ``{"matmul": bool, "conv": bool, "rnn": bool}``.

    ``effective``: the record's ``settings`` block (the switches ``set_tf32`` returned, and the process's
    ``NVIDIA_TF32_OVERRIDE``). ``rnn_cudnn``: the cell's LSTMs ran as cuDNN's RNN kernel (``rnn_on_cudnn``), so
    ``rnn`` follows the switch that governs that kernel, else the one that governs matmuls. True for an op kind on
    a GPU whose framework switch for it allows TF32 and no ``NVIDIA_TF32_OVERRIDE=0``; TF32 is a tensor-core
    mode, never on a CPU. A switch absent from ``effective`` does not count (a record without the framework's
    switches says False)."""
    out = {"matmul": False, "conv": False, "rnn": False}
    if device != "gpu" or effective.get("NVIDIA_TF32_OVERRIDE") == "0":
        return out
    rnn_kind = "rnn_cudnn" if rnn_cudnn else "rnn_matmul"
    for key, (kinds, allowing) in TF32_SWITCHES.items():
        if key in effective and effective[key] in allowing:
            for kind in kinds:
                if kind in out:
                    out[kind] = True
            if rnn_kind in kinds:
                out["rnn"] = True
    return out


def torch_compile_blocker(device: str) -> str | None:
    """Why ``torch.compile`` cannot run in this process on ``device`` (``cpu`` or ``gpu``); None when it can.

    CPU: inductor writes C++ kernels and builds them with a C++ compiler. GPU: inductor's kernels are
    Triton kernels, and Triton compiles a small C launcher for each at run time with ``$CC``, else gcc,
    else clang, against Python's headers (triton/runtime/build.py), so an image without them fails at
    the first compiled step. Checked on every device (``docs/platform.md``, "torch.compile's toolchain").
    """
    import shutil
    import sysconfig
    from pathlib import Path

    if device == "cpu":
        if any(shutil.which(c) for c in ("c++", "g++", "clang++")):
            return None
        return "torch.compile on CPU needs a C++ compiler for inductor's kernels; this image has none"
    compilers = [os.environ["CC"]] if os.environ.get("CC") else ["gcc", "clang"]
    if not any(shutil.which(c) for c in compilers):
        return ("torch.compile on GPU needs a C compiler (Triton builds its kernel launcher at run time); this "
                "image has none: install gcc and libc6-dev")
    include = sysconfig.get_paths()["include"]
    if not Path(include, "Python.h").is_file():
        return f"torch.compile on GPU needs Python's headers for Triton's launcher; {include}/Python.h is missing"
    return None


def device_peak_bytes(backend: str, device: str) -> int | None:
    """Peak device memory allocated by the framework in this process (bytes), None on CPU or unknown."""
    if device != "gpu":
        return None
    try:
        return framework(backend).peak_bytes()
    except Exception:  # a missing counter is recorded as null, never a failed cell
        return None


def is_oom(exc: BaseException) -> bool:
    """True when ``exc`` is an out-of-memory error of any framework."""
    text = f"{type(exc).__name__}: {exc}".lower()
    return isinstance(exc, MemoryError) or any(
        s in text for s in ("out of memory", "outofmemoryerror", "resource_exhausted", "resourceexhausted"))


def require_torch_compile(device: str, what: str) -> None:
    """Raise ``Unsupported`` naming ``what`` (the setting that asked for torch.compile) when
    ``torch_compile_blocker(device)`` finds the toolchain missing."""
    from bench.run.engines import Unsupported

    reason = torch_compile_blocker(device)
    if reason:
        raise Unsupported(f"{what}: {reason}")

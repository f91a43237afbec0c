"""Per-framework adapters: GPUs seen, a GPU matmul, a GEMM call, the TF32 switches, peak device memory and the
device barrier, one class per framework behind ``Framework``, so that the harness asks every framework the same
questions the same way and a new framework is one new class. Each family's package holds the adapter of the
framework it drives (``<package>.adapter.ADAPTER``: TensorFlow in ``keras``, PyTorch in ``torch``, JAX in ``jax``;
``bench.core.families.Family.framework``); ``framework(backend)`` imports the one a stack's backend names. The
module-level functions here are the adapter calls by backend name (the GEMM benchmark is ``bench.models.engines.gemm``,
the TF32 knob and its interpretation ``bench.models.engines.math_mode``). Each method imports its framework lazily:
call them only inside a cell or probe process.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, cast

from bench.core.families import framework_family


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
        ``bench.models.engines.math_mode.TF32_SWITCHES``)."""

    @abstractmethod
    def peak_bytes(self) -> int | None:
        """Peak GPU memory the framework allocated in this process (bytes), None when it has no counter."""

    @abstractmethod
    def barrier(self, device: str) -> Callable[[], None]:
        """A function that blocks until all queued work on ``device`` (``cpu`` or ``gpu``) is done."""


def framework(backend: str) -> Framework:
    """The adapter of a stack's ``backend`` (one of ``bench.core.families.FRAMEWORKS``), from the package of the
    family that drives it (imported on first use).

    Raises:
        ValueError: unknown backend.
    """
    module = importlib.import_module(framework_family(backend).module("adapter"))
    return cast(Framework, module.ADAPTER)


def make_barrier(backend: str, device: str) -> Callable[[], None]:
    """Return a function that blocks until all queued work of ``backend`` on ``device`` is done.

    Args:
        backend: one of ``bench.core.families.FRAMEWORKS``; the framework must already be importable.
        device: ``cpu`` or ``gpu``.

    TensorFlow: ``tf.test.experimental.sync_devices()``. JAX: ``block_until_ready`` on every live
    array (JAX dispatches asynchronously on CPU too). PyTorch: ``torch.cuda.synchronize()`` on GPU;
    CPU kernels run synchronously, so the barrier is a no-op there (``bench.models.engines.frameworks``).

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

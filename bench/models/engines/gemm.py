"""GEMM on a framework's GPU: one small matmul that proves the GPU path works (``gpu_matmul``) and the achieved
dense GEMM throughput (``gemm_tflops``, the "measured peak"), through each framework's adapter
(``bench.models.engines.frameworks``)."""

from __future__ import annotations

from bench.models.engines import frameworks


def gpu_matmul(backend: str) -> float:
    """One 256x256 float32 matmul on the framework's first GPU; returns the sum of the result.

    A real operation, so a PTX/driver mismatch fails here rather than in the first cell.
    """
    import numpy as np

    return frameworks.framework(backend).gpu_matmul(np.ones((256, 256), np.float32))


def gemm_tflops(backend: str, dtype: str, n: int = 8192, reps: int = 30, device: str = "gpu") -> float:
    """Achieved dense GEMM throughput (TFLOP/s) of ``reps`` n x n matmuls of random inputs in ``dtype``
    (``bfloat16`` or ``float32``; whether float32 may use TF32 is the caller's ``set_tf32`` and
    NVIDIA_TF32_OVERRIDE), after 3 warm-up calls: 2 n^3 FLOP per call over the seconds from the first call
    until the device has finished every call's work (``Framework.run_and_wait``). The "measured peak"
    beside the datasheet's, as mamf-finder measures it (one large square shape here, not its search over
    shapes).
    """
    import time

    fw = frameworks.framework(backend)
    call = fw.gemm_call(dtype, n, device)
    fw.run_and_wait(call, 3, device)
    t0 = time.perf_counter()
    fw.run_and_wait(call, reps, device)
    return 2.0 * n**3 * reps / (time.perf_counter() - t0) / 1e12

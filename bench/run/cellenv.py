"""The environment of a cell's process: the stack's variables, the GPU it may see, the TF32 override of its math
mode, and fresh torch.compile caches. The runner starts every cell with it; the probe, the doctor's GEMM and the
fidelity check use it too, so they measure what a cell would."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from bench.core.knobs import tf32_override
from bench.core.stacks import Stack


def cell_env(stack: Stack, device: str, settings: dict[str, Any] | None = None) -> dict[str, str]:
    """Environment of a cell's process: the stack's variables, and no visible GPU on a CPU run.

    ``NVIDIA_TF32_OVERRIDE``: ``0`` for a cell whose ``settings`` say ``tf32: off`` (strict FP32), otherwise absent,
    whatever the caller's environment held, so each framework's own TF32 switch decides, as the sources ran
    (``knobs.tf32_override``; the worker records the value its process had).
    """
    env = {**os.environ, **stack.env, "PYTHONUNBUFFERED": "1"}
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    override = tf32_override(settings or {})
    if override is None:
        env.pop("NVIDIA_TF32_OVERRIDE", None)
    else:
        env["NVIDIA_TF32_OVERRIDE"] = override
    return env


class EnvironmentProblem(Exception):
    """The cell's environment would make its framework run somewhere other than the cell's device."""


def gpu_env_problem(stack: Stack, device: str, env: Mapping[str, str]) -> str | None:
    """One line when ``env`` would silently keep a GPU cell of ``stack`` off the GPU, else None.

    JAX stacks: jaxlib 0.10.2 raises ValueError when both ``XLA_CLIENT_MEM_FRACTION`` and the deprecated
    ``XLA_PYTHON_CLIENT_MEM_FRACTION`` are set (jaxlib/xla_client.py ``generate_pjrt_gpu_plugin_options``, called
    while the CUDA plugin's backend is made), and JAX's backend initialisation logs that failure and goes on
    without the CUDA backend: the cell would run on the CPU. The images set ``XLA_CLIENT_MEM_FRACTION``
    (``bench.core.stacks.CONTAINER_ENV``), so a user's ``XLA_PYTHON_CLIENT_MEM_FRACTION`` passed in is enough.
    """
    if device != "gpu" or stack.backend != "jax":
        return None
    new, old = env.get("XLA_CLIENT_MEM_FRACTION", ""), env.get("XLA_PYTHON_CLIENT_MEM_FRACTION", "")
    if new and old:
        return (f"XLA_CLIENT_MEM_FRACTION={new} and XLA_PYTHON_CLIENT_MEM_FRACTION={old} are both set: jaxlib refuses "
                "the pair when it starts its CUDA backend and JAX then runs on the CPU; unset "
                "XLA_PYTHON_CLIENT_MEM_FRACTION (deprecated; XLA_CLIENT_MEM_FRACTION sets the same fraction)")
    return None


#: torch 2.13's switches for inductor's caches (torch/_inductor/config.py, torch/_functorch/config.py@v2.13.0); a
#: cell's ``settings.compile_cache`` names those its environment sets, since they change what the cache does.
INDUCTOR_CACHE_SWITCHES = ("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "TORCHINDUCTOR_FX_GRAPH_CACHE",
                           "TORCHINDUCTOR_AUTOGRAD_CACHE", "TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE",
                           "TORCHINDUCTOR_AUTOTUNE_REMOTE_CACHE", "TORCHINDUCTOR_BUNDLED_AUTOTUNE_REMOTE_CACHE")


@contextlib.contextmanager
def compile_caches(stack: Stack) -> Iterator[dict[str, str]]:
    """Fresh, empty torch.compile caches for one cell process of a PyTorch-backend stack: yields the
    environment that points them into a new directory, and removes it once the block ends. Empty for the
    other backends, which keep no compile cache on disk unless asked (JAX 0.10.2: ``jax_compilation_cache_dir``,
    None by default, jax/_src/config.py; TensorFlow 2.21's XLA: ``--tf_xla_persistent_cache_directory``).

    Inductor keeps its FX-graph, AOTAutograd and autotuning caches under ``TORCHINDUCTOR_CACHE_DIR``, by
    default ``/tmp/torchinductor_<user>`` (torch/_inductor/runtime/cache_dir_utils.py@v2.13.0), and Triton's
    kernels under ``TRITON_CACHE_DIR`` (else inside it), all on by default: the cells of one container would
    otherwise compile warm after the first cell with the same graph. The directory is made where inductor's
    default is (the system temporary directory), so reads and writes cost what they cost out of the box.
    Keras' ``jit_compile`` on the PyTorch backend is torch.compile, so the same caches. The caller's own
    ``TORCHINDUCTOR_CACHE_DIR`` / ``TRITON_CACHE_DIR`` are overridden.
    """
    if stack.backend != "torch":
        yield {}
        return
    root = Path(tempfile.mkdtemp(prefix="bench-compile-cache-"))
    try:
        yield {"TORCHINDUCTOR_CACHE_DIR": str(root / "torchinductor"), "TRITON_CACHE_DIR": str(root / "triton")}
    finally:
        shutil.rmtree(root, ignore_errors=True)  # a compile worker still exiting may write into it meanwhile


def compile_cache_setting(env: Mapping[str, str]) -> str:
    """The record's ``settings.compile_cache`` for a cell run with ``env`` (``compile_caches``): "fresh per
    cell", plus every inductor cache switch (``INDUCTOR_CACHE_SWITCHES``) the environment sets, e.g.
    "fresh per cell (TORCHINDUCTOR_FX_GRAPH_CACHE=0)"."""
    switches = [f"{k}={env[k]}" for k in INDUCTOR_CACHE_SWITCHES if k in env]
    return "fresh per cell" + (f" ({', '.join(switches)})" if switches else "")

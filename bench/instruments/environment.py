"""The environment block of a record: what ran, where, with which versions.

Framework-reported CUDA/cuDNN versions are read only from frameworks already imported by the cell,
so capturing the environment never imports TensorFlow into a PyTorch image or the reverse.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib
import importlib.metadata as md
import os
import platform
import re
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import bench
from bench.core import commit
from bench.core.stacks import STACKS, parse_pin
from bench.instruments.nvml import Gpu

#: The distributions a record names (``env.packages``) by name: the frameworks, their model libraries, the GPU
#: runtime's Triton, and the tools the harness uses; absent ones are left out. The rest of the GPU runtime is named
#: by ``GPU_RUNTIME``.
DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tf-keras", "keras", "keras-hub", "keras-nlp", "keras-cv", "jax",
                 "jaxlib", "flax", "optax", "torch", "torchvision", "triton", "transformers", "diffusers", "peft",
                 "numpy", "click", "pooch")
#: The GPU runtime's distributions, every one installed (``env.packages`` too): NVIDIA's (``nvidia-*``: cuBLAS, cuDNN,
#: the CUDA runtime, nvcc's ptxas, with which XLA compiles its GEMM kernels, nvJitLink, NCCL..., under the CUDA 12
#: names and the CUDA 13 ones; NVML's bindings) and XLA's CUDA plugin and PJRT for any CUDA major. Matched on the
#: distribution's normalised name (PEP 503).
GPU_RUNTIME = re.compile(r"nvidia-.+|jax-cuda[0-9]+-(plugin|pjrt)")
#: The environment variables a record names (``env.env_vars``): math mode, the frameworks' GPU memory allocators
#: (JAX/XLA's pool, TensorFlow's, PyTorch's caching allocator under its old and new names), XLA's flags, which GPU
#: and in which order CUDA numbers them, the JIT cache, Keras' backend.
ENV_VARS = ("NVIDIA_TF32_OVERRIDE", "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_CLIENT_MEM_FRACTION",
            "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_ALLOCATOR", "XLA_FLAGS",
            "TF_FORCE_GPU_ALLOW_GROWTH", "TF_GPU_ALLOCATOR", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF",
            "CUDA_CACHE_PATH", "KERAS_BACKEND", "TF_USE_LEGACY_KERAS", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
            "BENCH_OFFLINE")


def utc_now() -> str:
    """Current UTC time, ISO 8601 with seconds."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def package_versions() -> dict[str, str]:
    """Installed versions of the distributions that matter: ``DISTRIBUTIONS`` (absent ones are left out), then every
    installed one ``GPU_RUNTIME`` matches (``importlib.metadata.distributions()``, by normalised name, sorted; the
    first found on ``sys.path`` where one is installed twice, as ``importlib.metadata.version`` takes)."""
    out = {}
    for name in DISTRIBUTIONS:
        with contextlib.suppress(md.PackageNotFoundError):
            out[name] = md.version(name)
    runtime: dict[str, str] = {}
    for dist in md.distributions():
        name = re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower()
        if GPU_RUNTIME.fullmatch(name) and name not in runtime:
            runtime[name] = dist.version
    return out | dict(sorted(runtime.items()))


def _release(version: str) -> str:
    """A version with the trailing ``.0`` of its release dropped (``3.14.0`` and ``3.14`` are one version)."""
    m = re.match(r"([0-9.]*)(.*)", version.strip().lower())
    head, tail = m.groups() if m else ("", version)
    return re.sub(r"(\.0)+$", "", head.rstrip(".")) + tail


def stack_pins(stack_id: str) -> dict[str, Any]:
    """The record's ``env.stack_base``, ``env.pins`` and ``env.pins_ok`` for stack ``stack_id``: for a derived stack
    (``bench.core.stacks.Stack.base``), its base and, per pinned package, the version installed in this environment
    (``importlib.metadata``; None when not installed), and whether every one is the declared version; for any other
    stack (or an unknown id) None, {} and None."""
    s = STACKS.get(stack_id)
    if s is None or s.base is None:
        return {"stack_base": None, "pins": {}, "pins_ok": None}
    installed: dict[str, str | None] = {}
    ok = True
    for pin in s.pins:
        name, want = parse_pin(pin)
        try:
            installed[name] = md.version(name)
        except md.PackageNotFoundError:
            installed[name] = None
        ok = ok and installed[name] is not None and _release(installed[name] or "") == _release(want)
    return {"stack_base": s.base, "pins": installed, "pins_ok": ok}


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def git_commit(env: Mapping[str, str] | None = None, folder: Path | None = None) -> str | None:
    """The identity of the code that runs (``bench.core.commit``, the one definition): ``BENCH_GIT_COMMIT`` of ``env``
    (default ``os.environ``; an image bakes in its build's, the GPU window's command line gives it), as given; else
    ``commit.identity`` of ``folder`` (default the package's own): HEAD, with ``DIRTY`` and the hash of the edits
    where a file of the folder differs from it, ``UNCHECKED`` where git could not list them. None where git names no
    HEAD."""
    given = (os.environ if env is None else env).get("BENCH_GIT_COMMIT")
    if given not in (None, "", "unknown"):
        return given
    return commit.identity(folder)


def framework_cuda() -> dict[str, Any]:
    """CUDA and cuDNN versions as each already-imported framework reports them."""
    out: dict[str, Any] = {}
    if "tensorflow" in sys.modules:
        info = sys.modules["tensorflow"].sysconfig.get_build_info()
        tf = sys.modules["tensorflow"]
        out["tensorflow"] = {"cuda": info.get("cuda_version"), "cudnn": info.get("cudnn_version"),
                             "is_cuda_build": info.get("is_cuda_build"),
                             "visible_gpus": [d.name for d in tf.config.get_visible_devices("GPU")]}
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        out["torch"] = {"cuda": torch.version.cuda, "cudnn": cudnn}
    if "jax" in sys.modules:
        try:
            # ``import jax`` (0.10.2) does not import ``jax.extend``: without Flax (which imports it) the
            # attribute is missing, so the submodule is imported here (jax is already in the process)
            backend = importlib.import_module("jax.extend.backend").get_backend()
            out["jax"] = {"platform": backend.platform, "platform_version": backend.platform_version}
        except Exception as e:  # the field says why instead of failing the cell
            out["jax"] = {"error": f"{type(e).__name__}: {e}"}
    return out


def device_order_note(gpu: Gpu, env: Mapping[str, str], count: int) -> str | None:
    """Why NVML's GPU ``gpu.device`` (an index, of ``count``) may not be the cell's first CUDA device: the host has
    GPUs of different models and CUDA numbers them fastest first (no ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` in ``env``).
    None when the index is safe (a UUID, one GPU, PCI order, or GPUs of one model). ``gpu``: a
    ``bench.instruments.nvml.Gpu``; raises NVML's error when another GPU's name cannot be read."""
    device = gpu.device
    if isinstance(device, int) and count > 1 and env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID" and len(
            {Gpu(gpu.nv, i).name() for i in range(count)}) > 1:
        visible = env.get("CUDA_VISIBLE_DEVICES")
        return (f"the cell's first CUDA device (CUDA_VISIBLE_DEVICES={visible or 'unset'}) read as NVML's GPU "
                f"{device}; CUDA numbers GPUs fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, so on this host "
                "of different GPU models it may be another one: set CUDA_DEVICE_ORDER=PCI_BUS_ID or give the "
                "GPU's UUID in CUDA_VISIBLE_DEVICES")
    return None


def gpu_info(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The cell's GPU as NVML sees it: name, UUID, driver, CUDA driver version, memory (bytes), MIG mode, and
    ``nvml_device``, the NVML index or UUID it was read from.

    NVML ignores ``CUDA_VISIBLE_DEVICES``, so its first entry (``env``, default ``os.environ``) is mapped as the
    telemetry maps it (``bench.instruments.nvml.nvml_index``): a UUID is looked up by UUID, an index is taken as an
    NVML index, as torch 2.13 maps it (torch/cuda/__init__.py, ``_get_nvml_device_index``); unset, GPU 0 (a
    container's only GPU). An index is right when CUDA numbers GPUs as NVML does: with
    ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (CUDA's "PCI bus ID in ascending order"); with GPUs of one model CUDA's
    default FASTEST_FIRST heuristic ties and the same is assumed, as torch's mapping assumes it. On a host of
    different models it may be another GPU: then ``nvml_device_note`` says so.

    Returns ``{"available": False, "reason": ...}`` without a driver or NVML, when the GPU is not found, or when
    ``CUDA_VISIBLE_DEVICES`` is set and empty: CUDA shows the process no GPU (a CPU cell, ``bench.run.cellenv``), so
    GPU 0 is not its GPU (``nvml_index`` reads an empty entry as unset).
    """
    from bench.instruments import nvml

    if env is None:
        env = os.environ
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and not visible.strip():
        return {"available": False, "reason": "no GPU visible to the process: CUDA_VISIBLE_DEVICES is empty"}
    try:
        nv = nvml.init()
    except Exception as e:
        return {"available": False, "reason": f"NVML unavailable: {type(e).__name__}: {e}"}
    try:
        device = nvml.nvml_index(env)
        gpu = Gpu(nv, device)
        cuda = gpu.cuda_driver_version()
        count = gpu.device_count()
        name = gpu.name()
        info = {
            "available": True,
            "count": count,
            "nvml_device": device,
            "name": name,
            "uuid": gpu.uuid(),
            "driver": gpu.driver_version(),
            "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}",
            "memory_total_bytes": gpu.memory_total_bytes(),
            "mig_mode": gpu.mig_mode(name),
        }
        note = device_order_note(gpu, env, count)
        if note:
            info["nvml_device_note"] = note
        return info
    except Exception as e:
        return {"available": False, "reason": f"NVML query failed: {type(e).__name__}: {e}"}
    finally:
        nvml.shutdown(nv)


def cuda_cache_bytes(env: Mapping[str, str] | None = None) -> int | None:
    """Bytes in the CUDA JIT cache (``CUDA_CACHE_PATH`` of ``env``, default ``os.environ``), None when the
    variable is unset; 0 while the directory does not exist (the driver makes it at its first JIT).

    The driver JIT-compiles PTX for GPUs a wheel has no machine code for (TensorFlow 2.21 on a GPU past sm_90)
    and keeps the result there; compose puts it on a volume so that it outlives ``--rm`` containers.
    """
    root = (os.environ if env is None else env).get("CUDA_CACHE_PATH")
    if not root:
        return None
    total = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(dirpath, name))
    return total


def cuda_cache_block(bytes_before: int | None, env: Mapping[str, str] | None = None,
                     exited: bool = True) -> dict[str, Any]:
    """The record's ``env.cuda_cache`` for the cache of ``env`` (default ``os.environ``): path, size limit,
    bytes before the cell's process started and now, and whether the cell JIT-compiled PTX (the cache grew:
    its first step or epoch includes that compilation; None without ``CUDA_CACHE_PATH``, and None where it did
    not grow but the process did not exit (``exited`` False: killed or crashed, the driver may not have written
    it)).

    Call it after the cell's process has exited (``bench.run.runner.add_cuda_cache``): the driver writes what it
    compiled as the process's CUDA context is torn down, so a reading inside the process misses it.
    """
    env = os.environ if env is None else env
    after = cuda_cache_bytes(env)
    grew = None if bytes_before is None or after is None else after > bytes_before
    if grew is False and not exited:
        grew = None
    return {"path": env.get("CUDA_CACHE_PATH"), "maxsize": env.get("CUDA_CACHE_MAXSIZE"),
            "bytes_before": bytes_before, "bytes_after": after, "jit_compiled": grew}


#: The folder SingularityCE 4's ``--oci`` mode appends to every OCI image's ``LD_LIBRARY_PATH`` (its
#: ``getProcessEnv``, internal/pkg/runtime/launcher/oci/process_linux.go@v4.5.1:371-372, ``singularityLibs``): a
#: path inside the container only, which no host environment holds.
SINGULARITY_OCI_LIBS = "/.singularity.d/libs"


def in_container(env: Mapping[str, str], root: Path = Path("/")) -> bool:
    """Whether this process runs in a container, by the marks container runtimes leave: Docker's ``/.dockerenv``,
    Podman's and CRI-O's ``/run/.containerenv``, the ``container`` variable (Podman, systemd-nspawn), for a
    Kubernetes pod under containerd (which leaves no file) ``KUBERNETES_SERVICE_HOST``, which the kubelet sets in
    every container, and on HPC clusters Apptainer's and Singularity's ``/.singularity.d`` (every image holds its
    environment scripts there), SingularityCE 4's ``--oci`` mode, whose OCI image has no ``/.singularity.d`` (on a
    CPU nothing is bound there) but whose ``LD_LIBRARY_PATH`` always ends in ``SINGULARITY_OCI_LIBS``, and enroot's
    (Slurm's pyxis) ``/.lock``, the root's lock file it holds while a container runs (src/runtime.sh ``lock_file``).
    Not the ``SINGULARITY_CONTAINER`` variable, though ``--oci`` sets it too (process_linux.go@v4.5.1
    ``defaultEnv``): batch scripts set it on the host to name an image. ``root``: the file system's root (tests
    pass a folder)."""
    files = (root / ".dockerenv", root / "run" / ".containerenv", root / ".singularity.d", root / ".lock")
    oci = SINGULARITY_OCI_LIBS in env.get("LD_LIBRARY_PATH", "").split(":")
    return any(f.exists() for f in files) or oci or bool(env.get("container") or env.get("KUBERNETES_SERVICE_HOST"))


def native(env: Mapping[str, str]) -> bool:
    """The record's ``env.native`` for a process whose environment variables are ``env``: no stack image runs it.
    Every image sets ``BENCH_IMAGE`` (images/Dockerfile); without it no image's pins ran the cell."""
    return not env.get("BENCH_IMAGE")


def capture(env: Mapping[str, str] | None = None, frameworks: bool = True) -> dict[str, Any]:
    """The full environment block (see docs/outputs.md) of a process whose environment variables are ``env``
    (default ``os.environ``: the worker's own; the runner passes the cell's when it writes the block for a worker
    that wrote no record, with ``frameworks`` False: no framework ran there, so ``framework_cuda`` is empty)."""
    env = os.environ if env is None else env
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "bench_version": bench.__version__,
        "git_commit": git_commit(env),
        "image": env.get("BENCH_IMAGE"),
        # the Makefile passes the image's registry digest (pulled or pushed) or its local ID (built here), and the ID
        "image_digest": env.get("BENCH_IMAGE_DIGEST") or None,
        "image_id": env.get("BENCH_IMAGE_ID") or None,
        "image_flavor": env.get("BENCH_FLAVOR"),
        "in_container": in_container(env),
        "native": native(env),
        "packages": package_versions(),
        "framework_cuda": framework_cuda() if frameworks else {},
        "gpu": gpu_info(env),
        "env_vars": {k: env.get(k) for k in ENV_VARS},
    }

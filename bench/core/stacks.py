"""The stacks of the matrix: the one list. Standard library only (the host's preflight imports it).

Adding a stack is one entry here and its locks under ``images/<id>/`` (``make lock``); ``make stacks`` then
writes ``compose.yaml``, ``compose.gpu.yaml`` and ``images/stacks.mk`` (the Makefile's stack lists and build
arguments) from this list, and a unit test fails while they are stale. ``images/Dockerfile`` builds every
stack from its ``build_args``. The plan, the CLI, the doctor and the report read this list directly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

#: The environment variables a stack may set; images/Dockerfile sets each from a build argument.
IMAGE_ENV = ("KERAS_BACKEND", "TF_USE_LEGACY_KERAS")


@dataclass(frozen=True)
class ContainerVar:
    """One environment variable every bench container gets, whoever starts it: compose (``x-bench`` in
    ``compose.yaml``, written by ``bench.host.stackfiles``) and the Kubernetes Job (``bench.host.cloud.k8s_job``).

    Attributes:
        name: the variable.
        value: its value in every container; for a ``from_host`` variable, compose's default for it.
        from_host: compose takes it from the host (``${NAME:-value}``: ``make`` exports it from its knobs).
            The Kubernetes Job has no host: it sets ``job_value``.
        job_value: its value in the Kubernetes Job when that differs from ``value`` (None: ``value``).
        why: the reason for it, written above it in ``compose.yaml``.
    """

    name: str
    value: str
    from_host: bool = False
    job_value: str | None = None
    why: str = ""

    @property
    def compose_value(self) -> str:
        """Its value in ``compose.yaml`` (``${NAME:-value}`` for a ``from_host`` variable)."""
        return f"${{{self.name}:-{self.value}}}" if self.from_host else self.value

    @property
    def job(self) -> str:
        """Its value in the Kubernetes Job."""
        return self.value if self.job_value is None else self.job_value


@dataclass(frozen=True)
class ContainerVolume:
    """A folder every bench container mounts.

    Attributes:
        name: the compose named volume and the Kubernetes volume (``cloud.k8s_job``).
        path: its mount point in the container.
        host_var: compose binds this host folder instead of a named volume: ``${host_var:-host_default}``
            (the results); the Kubernetes Job mounts its PersistentVolumeClaim there.
        host_default: compose's default host folder for ``host_var``.
        why: what lives there.
    """

    name: str
    path: str
    host_var: str = ""
    host_default: str = ""
    why: str = ""


#: The environment of every bench container (compose's ``x-bench`` and the Kubernetes Job): one list, so rows
#: from either are comparable. NVIDIA_TF32_OVERRIDE is not here: the runner sets it per cell. The allocators are
#: the frameworks' own, as keras-benchmarks v0.0.5 ran them (it sets no XLA_PYTHON_CLIENT_PREALLOCATE and no
#: TF_FORCE_GPU_ALLOW_GROWTH): JAX and TensorFlow preallocate their pool (one cell process at a time has the GPU),
#: PyTorch grows its caching allocator; only JAX's pool size differs from the source's (below).
CONTAINER_ENV: tuple[ContainerVar, ...] = (
    # jaxlib/xla_client.py@jax-v0.10.2 (generate_pjrt_gpu_plugin_options) passes this fraction (the deprecated
    # XLA_PYTHON_CLIENT_MEM_FRACTION beside it is an error) to XLA's BFC allocator, whose pool is total memory x
    # fraction, 0.75 by default, preallocated or not (xla/pjrt/gpu/gpu_helpers.cc CreateBFCAllocator, read in a
    # recent XLA, not at 5a9e73cb which jax-v0.10.2 pins; jax-cuda12-pjrt 0.10.2 has its log lines). 0.95
    # leaves 2 GiB of a 40 GiB GPU to the CUDA context, cuBLAS/cuDNN handles and CUDA graphs outside the pool;
    # TensorFlow keeps 1.5-1.8 GiB back for the same (tensorflow/core/common_runtime/gpu/gpu_device.cc
    # MinSystemMemory).
    ContainerVar("XLA_CLIENT_MEM_FRACTION", "0.95",
                 why="JAX's pool may grow to 95 % of GPU memory (XLA's default cap is 75 %, preallocated or not)"),
    ContainerVar("CUDA_CACHE_PATH", "/cache/cuda",
                 why="the driver's JIT cache outlives `--rm` containers: a GPU newer than a wheel's machine code "
                     "(TensorFlow 2.21: past sm_90) runs its PTX through it"),
    ContainerVar("CUDA_CACHE_MAXSIZE", "4294967296", why="4 GiB, CUDA's maximum"),
    ContainerVar("TF_CPP_MIN_LOG_LEVEL", "1"),
    ContainerVar("BENCH_DEVICE", "auto", from_host=True, job_value="gpu",
                 why="the device make resolved (the Kubernetes Job holds one GPU: gpu)"),
    ContainerVar("BENCH_OFFLINE", "0", from_host=True),
    ContainerVar("BENCH_REPEATS", "", from_host=True, why="empty: 3 on GPU, 1 on CPU"),
)

#: The CUDA architectures in the pinned TensorFlow 2.21.0 wheel's fatbins (tensorflow-2.21.0-cp311-cp311-
#: manylinux_2_27_x86_64.whl), read from the ``.nv_fatbin`` sections of ``tensorflow/libtensorflow_framework.so.2``
#: (40 kernels per architecture) and ``tensorflow/libtensorflow_cc.so.2`` (249): machine code (SASS, ELF entries)
#: for these compute capabilities, and PTX for ``ptx``. Its ``build_info.py`` says ``sm_60 sm_70 sm_80 sm_89
#: compute_90``: in TensorFlow's build, ``compute_90`` means SASS *and* PTX for 9.0. So H100/H200 (9.0) run
#: TensorFlow's own kernels from machine code; only a GPU past 9.0 JIT-compiles the 9.0 PTX.
#: ``tests/host/test_doctor.py::test_tf_fatbin_archs_are_the_installed_wheels`` re-reads them from the installed wheel.
TF_FATBIN_ARCHS: dict[str, tuple[int, ...]] = {"sass": (60, 70, 80, 89, 90), "ptx": (90,)}

#: The folders every bench container mounts (compose: a host folder and named volumes; the Kubernetes Job: its
#: results claim and volumes that live as long as its pod, which runs every stack of the comparison).
CONTAINER_VOLUMES: tuple[ContainerVolume, ...] = (
    ContainerVolume("results", "/results", host_var="BENCH_RESULTS", host_default="./results",
                    why="records, CSVs, reports"),
    ContainerVolume("datasets", "/data", why="BENCH_DATA_DIR: each dataset fetched once"),
    ContainerVolume("cuda-cache", "/cache", why="CUDA_CACHE_PATH"),
)


@dataclass(frozen=True)
class Stack:
    """One framework stack, named the same in the CLI, CSV, compose and docs.

    Attributes:
        id: stack id used everywhere (e.g. ``keras3-jax``).
        service: its compose service name.
        title: human-readable description.
        family: the family that trains it (``bench.core.families.FAMILIES``): ``keras`` (model.fit on a Keras
            model), ``torch`` (a plain PyTorch loop) or ``jax`` (a plain Flax NNX + optax loop).
        backend: the array framework doing the work, one the families drive (``bench.core.families.FRAMEWORKS``):
            ``tensorflow``, ``jax`` or ``torch``.
        label: short column title in the report (e.g. ``Keras 3 JAX``).
        env: environment variables the worker process needs before importing the framework.
        gpu_cuda: the CUDA version the gpu image's wheels bundle.
        min_driver: the oldest NVIDIA driver branch that runs them (CUDA 12.x wheels: R525 through
            minor-version compatibility; CUDA 13.0: R580). TensorFlow 2.21 holds sm_90 machine code
            (``TF_FATBIN_ARCHS``), so H100/H200 need nothing newer for it (docs/images.md, "Drivers").
        reference: the stack's name in the published reference tables (``bench/core/reference/``), None when
            the references have no such column; one stack per name.
        imports: the modules its image build imports as a check (framework, model libraries).
        dockerfile: the Dockerfile that builds its image (``build_args``); its locks are
            ``images/<id>/requirements-<flavor>.lock``. One Dockerfile serves every stack today.
        flavors: the image flavors it has: ``cpu`` and ``gpu``, or ``gpu`` alone where no CPU build of
            its framework can be locked (it then runs on a CPU only from its gpu image).
        default: part of ``make bench-all``'s default ``STACKS``; an extra stack is run by naming it.
        layer: the shared framework layer its image starts from (empty: none): every package that all the
            stacks naming the same layer pin identically (same version and hashes) in their lock of a
            flavor, written to ``images/layers/<layer>-<flavor>.lock`` by ``make stacks`` and installed
            in one image layer before the stack's own lock. The images then share that layer (the
            framework and its CUDA libraries: 5.2-6.7 GB of each gpu image), built and stored once. A derived
            stack (``base``) starts from its base's layer but is no member of it: the layer stays what the
            hand-written stacks share, and the derived stack's own lock (``uv pip sync``) replaces what it pins.
        sublayer: a second shared layer, above ``layer``, for the members of that layer that share more (empty:
            none): e.g. ``jax`` (jax, jaxlib and its CUDA plugins) for ``keras3-jax`` and ``jax``, which sit on
            the ``tensorflow`` layer with ``keras2-tf`` and ``keras3-tf``. Its lock
            ``images/layers/<sublayer>-<flavor>.lock`` holds what its members pin identically and ``layer``
            does not; all its members name the same ``layer``.
        base: the id of the stack this one is derived from (``make version-stack``; ``DERIVED_FILE``), None for
            the hand-written stacks. A derived stack is its base with ``pins`` changed: everything else inherited.
        pins: the requirement lines (``name==version``) that differ from the base, e.g. ``("keras==3.14.0",)``.
    """

    id: str
    service: str
    title: str
    family: str
    backend: str
    label: str
    env: dict[str, str] = field(default_factory=dict)
    gpu_cuda: str = "12.9"
    min_driver: int = 525
    reference: str | None = None
    imports: tuple[str, ...] = ()
    dockerfile: str = "images/Dockerfile"
    flavors: tuple[str, ...] = ("cpu", "gpu")
    default: bool = True
    layer: str = ""
    sublayer: str = ""
    base: str | None = None
    pins: tuple[str, ...] = ()

    def build_args(self) -> dict[str, str]:
        """The Dockerfile's build arguments for this stack (the flavor aside): its id, the environment the
        image sets (``IMAGE_ENV``; empty where the stack sets none), the C toolchain that torch.compile
        needs on GPU (torch backends), its shared ``layer`` and ``sublayer`` and the modules the build imports as
        its check."""
        return {"STACK": self.id, **{k: self.env.get(k, "") for k in IMAGE_ENV},
                "TOOLCHAIN": "1" if self.backend == "torch" else "0", "LAYER": self.layer,
                "SUBLAYER": self.sublayer, "IMPORTS": ",".join(self.imports)}

    def image(self, flavor: str) -> str:
        """The local image tag of ``flavor`` (``dlbench/<id>:<flavor>``)."""
        return f"dlbench/{self.id}:{flavor}"

    @property
    def keras_major(self) -> int | None:
        """2 for tf-keras, 3 for Keras 3, None for plain PyTorch or plain JAX."""
        if self.family != "keras":
            return None
        return 2 if self.env.get("TF_USE_LEGACY_KERAS") == "1" else 3


#: The derived stacks (``make version-stack``, ``bench.host.versions``): a JSON list of ``{"base": <stack id>,
#: "pins": ["name==version", ...]}``, each entry built into a ``Stack`` by ``derive`` and added to ``STACKS``. Data,
#: not code, because a program writes it (idempotently, sorted); this module stays the one list that reads it.
DERIVED_FILE = Path(__file__).with_name("derived_stacks.json")

#: A path component of a Docker image reference (distribution/reference grammar.go ``path-component``, lowercase
#: only): a derived stack's id is one, so ``dlbench/<id>:<flavor>`` is a valid image name.
IMAGE_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
#: An exact pin: name (PEP 503 letters, digits, ``._-``), optional extras (ignored: each flavor keeps its base's
#: extras), ``==``, a version of PEP 440's public characters (a local ``+label`` would not fit an image name).
PIN = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[^\]]*\])?"
                 r"\s*==\s*([A-Za-z0-9][A-Za-z0-9.!]*)\s*")


def normalize(name: str) -> str:
    """A distribution name in PEP 503 normal form (``Keras_Hub`` -> ``keras-hub``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_pin(pin: str) -> tuple[str, str]:
    """``(normalised name, version)`` of an exact pin ``name==version`` (``name[extras]==version`` too).

    Raises:
        ValueError: not an exact ``name==version`` pin.
    """
    m = PIN.fullmatch(pin)
    if not m:
        raise ValueError(f"pin {pin!r} is not name==version (an exact pin, e.g. keras==3.14.1)")
    return normalize(m.group(1)), m.group(2)


def derived_id(base: str, pins: tuple[str, ...]) -> str:
    """The id of ``base`` with ``pins``: ``<base>--<name>-<version>`` per pin, sorted by name (e.g.
    ``keras3-jax--keras-3.14.1``); lowercase, a Docker image path component and a compose service name.

    Raises:
        ValueError: a bad pin, a package pinned twice, or an id that is no valid image name.
    """
    parsed = sorted(parse_pin(p) for p in pins)
    names = [n for n, _ in parsed]
    if not parsed or len(set(names)) != len(names):
        raise ValueError(f"pins {list(pins)}: give at least one, each package once")
    out = base + "".join(f"--{n}-{v.lower()}" for n, v in parsed)
    if not IMAGE_COMPONENT.fullmatch(out) or len(out) > 128:
        raise ValueError(f"stack id {out!r} is not a valid Docker image name component")
    return out


def derive(base: Stack, pins: tuple[str, ...]) -> Stack:
    """``base`` with ``pins`` changed: its own id (``derived_id``), service (``<id>-bench``), title and label
    naming the pins, ``default=False`` (run by naming it), no reference column; everything else inherited.

    Raises:
        ValueError: as ``derived_id``, or ``base`` is itself derived (derive from its base with every pin).
    """
    if base.base is not None:
        raise ValueError(f"{base.id} is derived from {base.base}: derive from {base.base} with all the pins")
    canon = tuple(f"{n}=={v}" for n, v in sorted(parse_pin(p) for p in pins))
    sid = derived_id(base.id, canon)
    return replace(base, id=sid, service=f"{sid}-bench", title=f"{base.title}, {', '.join(canon)}",
                   label=f"{base.label} ({', '.join(c.replace('==', ' ') for c in canon)})", reference=None,
                   default=False, base=base.id, pins=canon)


def load_derived(path: Path, stacks: dict[str, Stack]) -> dict[str, Stack]:
    """The derived stacks declared in ``path`` (``DERIVED_FILE``; absent: none), by id, built on ``stacks``.

    Raises:
        ValueError: unreadable JSON, an unknown base, a bad pin, or an id taken already (the message names the file).
    """
    if not path.is_file():
        return {}
    try:
        entries = json.loads(path.read_text())
        out: dict[str, Stack] = {}
        for e in entries:
            if e["base"] not in stacks:
                raise ValueError(f"unknown base stack {e['base']!r}")
            s = derive(stacks[e["base"]], tuple(e["pins"]))
            if s.id in stacks or s.id in out:
                raise ValueError(f"stack {s.id} declared twice")
            out[s.id] = s
        return out
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: {e}") from None


STACKS: dict[str, Stack] = {
    s.id: s
    for s in (
        Stack("keras2-tf", "keras2-bench", "Keras 2 (tf-keras) on TensorFlow", "keras", "tensorflow",
              "Keras 2 (TF)", {"TF_USE_LEGACY_KERAS": "1"}, reference="keras2-tensorflow",
              imports=("tensorflow", "tf_keras", "keras_nlp", "keras_cv"), layer="tensorflow"),
        Stack("keras3-tf", "tf-bench", "Keras 3, TensorFlow backend", "keras", "tensorflow", "Keras 3 TF",
              {"KERAS_BACKEND": "tensorflow"}, reference="keras3-tensorflow",
              imports=("keras", "tensorflow", "keras_hub", "keras_cv"), layer="tensorflow"),
        Stack("keras3-jax", "jax-bench", "Keras 3, JAX backend", "keras", "jax", "Keras 3 JAX",
              {"KERAS_BACKEND": "jax"}, reference="keras3-jax", imports=("keras", "jax", "keras_hub", "keras_cv"),
              layer="tensorflow", sublayer="jax"),  # TensorFlow for tf.data, and the same CUDA 12.9 libraries as TF's
        Stack("keras3-torch", "torch-bench", "Keras 3, PyTorch backend", "keras", "torch", "Keras 3 PyTorch",
              {"KERAS_BACKEND": "torch"}, gpu_cuda="13.0", min_driver=580, reference="keras3-torch",
              imports=("keras", "torch", "keras_hub", "keras_cv"), layer="torch"),
        Stack("pytorch", "pytorch-bench", "plain PyTorch, no Keras", "torch", "torch", "PyTorch",
              gpu_cuda="13.0", min_driver=580, reference="pytorch",
              imports=("torch", "torchvision", "transformers", "diffusers", "peft"), layer="torch"),
        Stack("jax", "plain-jax-bench", "plain JAX: Flax NNX models, optax optimizers, no Keras", "jax", "jax",
              "JAX (Flax)", imports=("jax", "flax", "optax", "tensorflow"),
              layer="tensorflow", sublayer="jax"),  # TensorFlow for tf.data, and the same CUDA 12.9 libraries as TF's
        # PyPI's last CUDA 12 build of torch (2.10.0, CUDA 12.8) for R525-R575 drivers, which cannot run
        # the CUDA 13.0 torch 2.13.0 of `pytorch`; gpu only: PyPI has no CPU build of it.
        Stack("pytorch-cu12", "pytorch-cu12-bench", "plain PyTorch 2.10 on CUDA 12.8, for older drivers",
              "torch", "torch", "PyTorch 2.10 (CUDA 12.8)", gpu_cuda="12.8", min_driver=525,
              imports=("torch", "torchvision", "transformers", "diffusers", "peft"), flavors=("gpu",), default=False),
    )
}
STACKS.update(load_derived(DERIVED_FILE, STACKS))

#: The stacks ``make bench-all`` runs unless told otherwise.
DEFAULT_STACKS = tuple(s.id for s in STACKS.values() if s.default)


def get_stack(stack_id: str) -> Stack:
    """Return the stack with this id.

    Raises:
        KeyError: unknown stack id (the message lists the known ones).
    """
    try:
        return STACKS[stack_id]
    except KeyError:
        raise KeyError(f"unknown stack {stack_id!r}; known: {', '.join(STACKS)}") from None

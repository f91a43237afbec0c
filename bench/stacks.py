"""The stacks of the matrix: the one list. Standard library only (the host's preflight imports it).

Adding a stack is one entry here, its locks under ``images/<id>/`` (``make lock``) and, when no existing
Dockerfile fits, a Dockerfile; ``make stacks`` then writes ``compose.yaml``, ``compose.gpu.yaml`` and
``images/stacks.mk`` (the Makefile's stack list) from this list, and a unit test fails while they are stale.
The plan, the CLI, the doctor and the report read this list directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Stack:
    """One framework stack, named the same in the CLI, CSV, compose and docs.

    Attributes:
        id: stack id used everywhere (e.g. ``keras3-jax``).
        service: its compose service name.
        title: human-readable description.
        engine: ``keras`` (model.fit on a Keras model) or ``torch`` (a plain PyTorch loop).
        backend: the array framework doing the work: ``tensorflow``, ``jax`` or ``torch``.
        label: short column title in the report (e.g. ``Keras 3 JAX``).
        env: environment variables the worker process needs before importing the framework.
        gpu_cuda: the CUDA version the gpu image's wheels bundle.
        min_driver: the oldest NVIDIA driver branch that runs them (CUDA 12.x wheels: R525 through
            minor-version compatibility; CUDA 13.0: R580). TensorFlow on H100/H200 also JIT-compiles its
            CUDA 12.5 PTX, which needs R555 (README, "Drivers").
        reference: the stack's name in the published reference tables (``bench/reference/``), None when
            the references have no such column; one stack per name.
        dockerfile: the Dockerfile that builds its image (build argument ``STACK`` = ``id``); its locks are
            ``images/<id>/requirements-<variant>.lock``.
        variants: the image variants it has: ``cpu`` and ``gpu``, or ``gpu`` alone where no CPU build of
            its framework can be locked (it then runs on a CPU only from its gpu image).
        default: part of ``make bench-all``'s default ``STACKS``; an extra stack is run by naming it.
    """

    id: str
    service: str
    title: str
    engine: str
    backend: str
    label: str
    env: dict[str, str] = field(default_factory=dict)
    gpu_cuda: str = "12.9"
    min_driver: int = 525
    reference: str | None = None
    dockerfile: str = ""
    variants: tuple[str, ...] = ("cpu", "gpu")
    default: bool = True

    def __post_init__(self) -> None:
        if not self.dockerfile:
            object.__setattr__(self, "dockerfile", f"images/{self.id}/Dockerfile")

    def image(self, variant: str) -> str:
        """The local image tag of ``variant`` (``dlbench/<id>:<variant>``)."""
        return f"dlbench/{self.id}:{variant}"

    @property
    def keras_major(self) -> int | None:
        """2 for tf-keras, 3 for Keras 3, None for plain PyTorch."""
        if self.engine != "keras":
            return None
        return 2 if self.env.get("TF_USE_LEGACY_KERAS") == "1" else 3


STACKS: dict[str, Stack] = {
    s.id: s
    for s in (
        Stack("keras2-tf", "keras2-bench", "Keras 2 (tf-keras) on TensorFlow", "keras", "tensorflow",
              "Keras 2 (TF)", {"TF_USE_LEGACY_KERAS": "1"}, reference="keras2-tensorflow"),
        Stack("keras3-tf", "tf-bench", "Keras 3, TensorFlow backend", "keras", "tensorflow", "Keras 3 TF",
              {"KERAS_BACKEND": "tensorflow"}, reference="keras3-tensorflow"),
        Stack("keras3-jax", "jax-bench", "Keras 3, JAX backend", "keras", "jax", "Keras 3 JAX",
              {"KERAS_BACKEND": "jax"}, reference="keras3-jax"),
        Stack("keras3-torch", "torch-bench", "Keras 3, PyTorch backend", "keras", "torch", "Keras 3 PyTorch",
              {"KERAS_BACKEND": "torch"}, gpu_cuda="13.0", min_driver=580, reference="keras3-torch"),
        Stack("pytorch", "pytorch-bench", "plain PyTorch, no Keras", "torch", "torch", "PyTorch",
              gpu_cuda="13.0", min_driver=580, reference="pytorch"),
        # PyPI's last CUDA 12 build of torch (2.10.0, CUDA 12.8) for R525-R575 drivers, which cannot run
        # the CUDA 13.0 torch 2.13.0 of `pytorch`; gpu only: PyPI has no CPU build of it.
        Stack("pytorch-cu12", "pytorch-cu12-bench", "plain PyTorch 2.10 on CUDA 12.8, for older drivers",
              "torch", "torch", "PyTorch 2.10 (CUDA 12.8)", gpu_cuda="12.8", min_driver=525,
              dockerfile="images/pytorch/Dockerfile", variants=("gpu",), default=False),
    )
}

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

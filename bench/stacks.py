"""The five stacks of the matrix. Adding a stack is one entry here plus its image under images/."""

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
        env: environment variables the worker process needs before importing the framework.
        gpu_cuda: the CUDA version the gpu image's wheels bundle.
        min_driver: the oldest NVIDIA driver branch that runs them (CUDA 12.x wheels: R525 through
            minor-version compatibility; CUDA 13.0: R580). TensorFlow on H100/H200 also JIT-compiles its
            CUDA 12.5 PTX, which needs R555 (README, "Drivers").
    """

    id: str
    service: str
    title: str
    engine: str
    backend: str
    env: dict[str, str] = field(default_factory=dict)
    gpu_cuda: str = "12.9"
    min_driver: int = 525

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
              {"TF_USE_LEGACY_KERAS": "1"}),
        Stack("keras3-tf", "tf-bench", "Keras 3, TensorFlow backend", "keras", "tensorflow",
              {"KERAS_BACKEND": "tensorflow"}),
        Stack("keras3-jax", "jax-bench", "Keras 3, JAX backend", "keras", "jax",
              {"KERAS_BACKEND": "jax"}),
        Stack("keras3-torch", "torch-bench", "Keras 3, PyTorch backend", "keras", "torch",
              {"KERAS_BACKEND": "torch"}, gpu_cuda="13.0", min_driver=580),
        Stack("pytorch", "pytorch-bench", "plain PyTorch, no Keras", "torch", "torch",
              gpu_cuda="13.0", min_driver=580),
    )
}


def get_stack(stack_id: str) -> Stack:
    """Return the stack with this id.

    Raises:
        KeyError: unknown stack id (the message lists the known ones).
    """
    try:
        return STACKS[stack_id]
    except KeyError:
        raise KeyError(f"unknown stack {stack_id!r}; known: {', '.join(STACKS)}") from None

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
    """

    id: str
    service: str
    title: str
    engine: str
    backend: str
    env: dict[str, str] = field(default_factory=dict)

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
              {"KERAS_BACKEND": "torch"}),
        Stack("pytorch", "pytorch-bench", "plain PyTorch, no Keras", "torch", "torch"),
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

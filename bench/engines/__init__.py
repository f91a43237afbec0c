"""Engines run a task of a workload on a stack inside the cell's own process.

``keras_engine`` drives ``model.fit`` for the four Keras stacks, ``torch_engine`` a plain PyTorch loop.
Both return the same record blocks: settings, metrics, history, model, memory.
"""

from types import ModuleType


class Unsupported(Exception):
    """The cell cannot run on this stack or with these settings; the message is the reason."""


def engine_for(engine: str) -> ModuleType:
    """The engine module for a stack's ``engine`` field (``keras`` or ``torch``); imports it lazily."""
    if engine == "keras":
        from bench.engines import keras_engine

        return keras_engine
    if engine == "torch":
        from bench.engines import torch_engine

        return torch_engine
    raise ValueError(f"unknown engine {engine!r}")


def steps_engine_for(engine: str) -> ModuleType:
    """The step-timed engine (``paper`` suite) for a stack's ``engine`` field; imports it lazily."""
    if engine == "keras":
        from bench.engines import keras_steps

        return keras_steps
    if engine == "torch":
        from bench.engines import torch_steps

        return torch_steps
    raise ValueError(f"unknown engine {engine!r}")

"""Engines run a task of a workload on a stack inside the cell's own process.

Epoch engines (``keras_engine``: ``model.fit`` on the four Keras stacks; ``torch_engine``: a plain PyTorch
loop) train a classic workload on its dataset and return settings, metrics, history, model, memory.
Step engines (``keras_steps``, ``torch_steps``) time the tasks of a step-timed workload (``paper`` suite)
and return settings, timer, model, memory.
"""

import importlib
from types import ModuleType


class Unsupported(Exception):
    """The cell cannot run on this stack or with these settings; the message is the reason."""


_MODULES = {"epochs": {"keras": "keras_engine", "torch": "torch_engine"},
            "steps": {"keras": "keras_steps", "torch": "torch_steps"}}


def engine_for(engine: str, kind: str = "epochs") -> ModuleType:
    """The engine module for a stack's ``engine`` field (``keras`` or ``torch``) and a workload ``kind``
    (``epochs`` or ``steps``); imports it lazily.

    Raises:
        ValueError: unknown engine or kind.
    """
    try:
        name = _MODULES[kind][engine]
    except KeyError:
        raise ValueError(f"unknown engine {engine!r} or kind {kind!r}") from None
    return importlib.import_module(f"bench.engines.{name}")

"""Engines run a task of a workload on a stack inside the cell's own process.

``keras_engine`` drives ``model.fit`` for the four Keras stacks, ``torch_engine`` a plain PyTorch loop.
Both return the same record blocks: settings, metrics, history, model, memory.
"""

"""dlbench: one benchmark harness for Keras 2, Keras 3 (TensorFlow, JAX, PyTorch), plain PyTorch and plain JAX.

Data flows one way: CLI -> plan of cells -> runner (one subprocess per cell) -> workload on a stack
-> result JSON -> collector CSV.
"""

__version__ = "0.1.0"

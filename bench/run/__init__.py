"""What runs inside the stack images: the plan of cells, the runner (a process per cell), the worker, the engines,
the workloads, timing, telemetry and the environment block.
"""

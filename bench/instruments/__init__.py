"""Instruments: what measures (clocks and barriers, NVML and its telemetry, the GPU state, the environment block, the
profiler). They import only ``bench.core`` and ``bench.results``; the models and the run sit above them.
"""

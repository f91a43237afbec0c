"""The orchestration that runs inside the stack images: the plan of cells, the runner (a process per cell), the worker
and the scenarios it dispatches to, the sweeps, and the checks that drive an engine (probe, fidelity, self-test). It
drives ``bench.models`` (what is measured) with ``bench.instruments`` (what measures).
"""

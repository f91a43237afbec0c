"""The GPU between cells: is anyone else on it, and is it back near its idle temperature.

A benchmark on a shared GPU is invalid (another process's kernels take the cell's GPU time, memory bandwidth and
power, and the cell's times and energy would count them), so before each GPU cell the runner records the compute
processes NVML lists on the cell's GPU (none of them is the cell: it has not started) and notes a violation in the
row. An optional cooldown waits, with a time cap, until the GPU is within ``delta_c`` degrees of the temperature it
had when the run started, so that a cell does not inherit the previous one's heat (clocks fall as the GPU warms);
what it waited is recorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.instruments.nvml import Gpu, describe_error
from bench.results.schema import HOST_PIDS


def seen_from() -> str:
    """Whose processes a ``processes`` count covers. ``nvmlDeviceGetComputeRunningProcesses`` inside a container
    lists only the processes of the container's PID namespace (NVIDIA/nvidia-docker issue #179: an empty list in
    the container while the host lists the process, shown with ``--pid=host``; NVML's own API reference for the
    call does not state the namespace rule), so without the host's PID namespace another tenant is invisible.
    Returns ``host pid namespace`` when PID 1 is an init (``HOST_INITS``: ``pid: host``, ``hostPID``, or no
    container), ``container pid namespace`` otherwise, ``unknown`` when /proc/1/comm cannot be read."""
    try:
        init = Path("/proc/1/comm").read_text().strip()
    except OSError:
        return "unknown"
    return HOST_PIDS if init in HOST_INITS else "container pid namespace"


#: PID 1's name when a process shares the host's PID namespace (a container's PID 1 is its own entry point).
HOST_INITS = ("systemd", "init")


def gpu_uuid(nv=None) -> str | None:
    """The NVML UUID of the GPU the cells run on (``nvml_index``), read once per ``bench run`` so resume can tell
    repeats measured on another GPU (a preempted spot VM); None without NVML. Never raises."""
    try:
        gpu = Gpu.open(nv)
    except Exception:
        return None
    try:
        return gpu.uuid()
    except Exception:
        return None
    finally:
        gpu.close()


def snapshot(nv=None) -> dict[str, Any]:
    """The cell's GPU now: ``processes`` (compute processes NVML lists), ``process_memory_bytes`` (theirs),
    ``temperature_c``, ``seen_from`` (``seen_from()``: what the process count covers); ``available`` False with
    ``reason`` without NVML or when neither reading could be made. Each reading is its own: one NVML refuses is null
    and named in ``reason`` (``processes: <error>``), the other kept; a MIG-enabled GPU's own handle lists its
    processes only to a privileged caller (nvml.h, ``nvmlDeviceGetComputeRunningProcesses``: NoPermission), while
    its temperature reads. Never raises."""
    try:
        gpu = Gpu.open(nv)
    except Exception as e:
        return {"available": False, "reason": f"NVML unavailable: {describe_error(e)}"}
    try:
        out: dict[str, Any] = {"available": True, "reason": None, "processes": None, "process_memory_bytes": None,
                               "temperature_c": None, "seen_from": None}
        failed = []
        try:
            used = [p.used_memory_bytes for p in gpu.compute_processes()]
            out.update(processes=len(used), process_memory_bytes=sum(u for u in used if isinstance(u, int)),
                       seen_from=seen_from())
        except Exception as e:
            failed.append(f"processes: {describe_error(e)}")
        try:
            out["temperature_c"] = gpu.temperature_c()
        except Exception as e:
            failed.append(f"temperature: {describe_error(e)}")
        if len(failed) == 2:
            return {"available": False, "reason": f"NVML query failed: {'; '.join(failed)}"}
        return {**out, "reason": f"NVML query failed: {failed[0]}"} if failed else out
    finally:
        gpu.close()


def busy_note(state: dict[str, Any]) -> str | None:
    """The row's note when another process was on the GPU as the cell started (None otherwise)."""
    if state.get("processes"):
        return (f"GPU busy: {state['processes']} other compute process(es) on the GPU when the cell started "
                f"({state['process_memory_bytes'] / 2**20:.0f} MiB): a shared GPU makes these numbers invalid")
    return None


class Cooldown:
    """Waits before a cell until the GPU is within ``delta_c`` °C of its idle temperature, polling every ``poll_s``
    s for at most ``max_s`` s. The idle temperature is ``idle_c`` when given (``--idle-temp-c``: the host reads it
    once before a comparison's first stack, since each stack's ``bench run`` starts right after the previous one
    heated the GPU), else the temperature at construction.

    Args:
        max_s: the cap (s); the cell runs after it even when the GPU is still warm (``reached`` false).
        delta_c: degrees above the idle temperature that count as cooled down.
        idle_c / idle_source: the idle temperature (°C) and where it was read (recorded as ``idle_source``).
        nv / sleep / clock: a pynvml-compatible module and the wait's functions (tests pass fakes).
    """

    def __init__(self, max_s: float, delta_c: float = 3.0, nv=None, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic, poll_s: float = 2.0,
                 idle_c: float | None = None, idle_source: str | None = None):
        self.max_s, self.delta_c, self.nv = max_s, delta_c, nv
        self.sleep, self.clock, self.poll_s = sleep, clock, poll_s
        if idle_c is None:
            self.idle_c = snapshot(nv).get("temperature_c")
            self.idle_source = "NVML as this bench run started (after any stack before it heated the GPU)"
        else:
            self.idle_c, self.idle_source = float(idle_c), idle_source or "given (--idle-temp-c)"

    def wait(self) -> dict[str, Any]:
        """Wait, then return the record's ``cooldown`` block: ``max_s``, ``idle_c``, ``idle_source``, ``target_c``,
        ``start_c``, ``end_c``, ``waited_s`` and ``reached`` (null temperatures and ``reason`` without NVML)."""
        block: dict[str, Any] = {"max_s": self.max_s, "delta_c": self.delta_c, "idle_c": self.idle_c,
                                 "idle_source": self.idle_source}
        if self.idle_c is None:
            return {**block, "target_c": None, "start_c": None, "end_c": None, "waited_s": 0.0, "reached": None,
                    "reason": "no GPU temperature (NVML)"}
        target = self.idle_c + self.delta_c
        t0 = self.clock()
        start = temp = snapshot(self.nv).get("temperature_c")
        while temp is not None and temp > target and self.clock() - t0 < self.max_s:
            self.sleep(self.poll_s)
            temp = snapshot(self.nv).get("temperature_c")
        return {**block, "target_c": target, "start_c": start, "end_c": temp, "waited_s": self.clock() - t0,
                "reached": temp is not None and temp <= target}

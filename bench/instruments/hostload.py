"""The CPU time the host's other processes used while a cell ran: a cell that shared the CPUs (another benchmark, a
test suite, a build) is slower by an amount its own numbers cannot show, on a GPU too (the input pipeline and the
Python loop that feeds the device run on the CPUs). The runner reads the host's busy CPU time before the cell's
process starts and after it has ended, and subtracts the process's own CPU time: what is left is everyone else's.

The host's time is the kernel's (``psutil.cpu_times``, from /proc/stat): not namespaced, so inside a container it is
the whole machine's, which is the point. The process's own is ``os.wait4``'s (user + system, with its waited-for
children: DataLoader workers, compile workers). Both count in clock ticks (10 ms), so a reading is good to a few
ticks per CPU.
"""

from __future__ import annotations

from typing import Any

from bench.results.repeats import CONTENDED_NOTE

#: The least CPU time per second of wall time (CPUs kept busy on average) that other processes must use for a cell
#: to count as run on a contended host: half a CPU, or 5 % of the CPUs on a host of more than 10. A cell's own loop
#: needs one core; another process holding half a core on average takes it from the cell for long stretches, while
#: a quiet host's daemons use about a hundredth (0.006 CPUs over 5 s, twice, on this project's idle 2-core VM with
#: dockerd running, 2026-11-27, ``busy_cpu_s`` around a sleep).
CONTENDED_CPUS = 0.5
CONTENDED_SHARE = 0.05


def busy_cpu_s(times: Any = None) -> float | None:
    """The host's busy CPU time since boot (s), all CPUs summed: every state but idle and I/O wait (``guest`` and
    ``guest_nice`` are left out: Linux counts them in ``user`` and ``nice`` already). ``times``: a
    ``psutil.cpu_times()`` answer (tests pass one). None where psutil cannot read it."""
    if times is None:
        try:
            import psutil

            times = psutil.cpu_times()
        except (ImportError, OSError, RuntimeError):
            return None
    fields = times._asdict()
    idle = sum(fields.get(k, 0.0) for k in ("idle", "iowait", "guest", "guest_nice"))
    return sum(fields.values()) - idle


def other_cpu_s(busy_before: float | None, busy_after: float | None, own_cpu_s: float) -> float | None:
    """CPU time (s) the host's other processes used between two ``busy_cpu_s`` readings, around a process that used
    ``own_cpu_s`` itself (user + system). Not clamped: a value a few ticks below 0 is the readings' resolution. None
    when either reading is missing."""
    if busy_before is None or busy_after is None:
        return None
    return busy_after - busy_before - own_cpu_s


def contended(other_s: float | None, wall_s: float, cpus: int | None) -> bool | None:
    """Whether other processes kept at least ``CONTENDED_CPUS`` CPUs (or ``CONTENDED_SHARE`` of ``cpus``) busy on
    average over the ``wall_s`` seconds of a cell. None when ``other_s`` is None or the wall time is 0."""
    if other_s is None or wall_s <= 0:
        return None
    return other_s / wall_s >= max(CONTENDED_CPUS, CONTENDED_SHARE * (cpus or 1))


def contention_note(other_s: float, wall_s: float, cpus: int | None) -> str:
    """The record's note for a contended cell (it starts with ``CONTENDED_NOTE``): how many CPUs others kept busy on
    average, of how many."""
    of = f" of {cpus}" if cpus else ""
    return (f"{CONTENDED_NOTE} other processes kept {other_s / wall_s:.2f} CPUs{of} busy on average while the cell ran "
            "(process.other_cpu_s): its times are not comparable with a quiet host's")

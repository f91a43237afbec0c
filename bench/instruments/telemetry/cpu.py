"""CPU utilisation of the bench process over the timed window."""

from __future__ import annotations

import os
from collections.abc import Callable


class CpuMeter:
    """CPU utilisation of this process (all threads) over a window, in % of one core."""

    def __init__(self, clock: Callable[[], float]):
        self._clock = clock
        self._t0: float | None = None
        self._c0: float | None = None

    @staticmethod
    def _cpu_s() -> float:
        t = os.times()
        return t.user + t.system

    def start(self) -> None:
        self._t0, self._c0 = self._clock(), self._cpu_s()

    def stop(self) -> float | None:
        if self._t0 is None or self._c0 is None:
            return None
        wall = self._clock() - self._t0
        return 100.0 * (self._cpu_s() - self._c0) / wall if wall > 0 else None

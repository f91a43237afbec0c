"""The timing cadence of a cell (its ``sync`` setting): how often a timer synchronises the device and reads the
clock. A knob (``bench.core.knobs``) and the timers' rule (``bench.instruments.timing``). Standard library only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class Cadence:
    """How often a timer synchronises the device and reads the clock (the ``sync`` setting of a cell).

    ``every``: steps per timed window; None times epoch edges only. ``step`` is ``every=1``.
    Every barrier is a point where the host waits for the device, so it changes what is measured: with
    a barrier per step the host can no longer queue step N+1 while the device runs step N. The fit
    suites default to ``epoch``, as their sources timed whole epochs (keras-team/keras-benchmarks' 2017
    study: s/epoch) and whole trainings (the tuning study's 41 epochs); the paper suite times steps, as
    its source did (steps of hundreds of ms).
    """

    every: int | None

    SYNTAX: ClassVar[str] = "'epoch', 'step' or 'every:N' (N a positive integer)"

    @classmethod
    def parse(cls, text: str) -> Cadence:
        """``epoch``, ``step`` or ``every:N``.

        Raises:
            ValueError: anything else (the message gives the syntax).
        """
        if text == "epoch":
            return cls(None)
        if text == "step":
            return cls(1)
        head, _, n = str(text).partition(":")
        if head == "every" and n.isdigit() and int(n) > 0:
            return cls(int(n))
        raise ValueError(f"sync={text!r} is not valid; expected {cls.SYNTAX}")

    @classmethod
    def accepts(cls, value: Any) -> bool:
        """Whether ``value`` is a valid cadence string."""
        try:
            cls.parse(value)
        except (ValueError, TypeError):
            return False
        return isinstance(value, str)

    def __str__(self) -> str:
        return "epoch" if self.every is None else "step" if self.every == 1 else f"every:{self.every}"

    @property
    def basis(self) -> str:
        """What one timed interval is: ``step``, ``window`` (every:N) or ``epoch``."""
        return "epoch" if self.every is None else "step" if self.every == 1 else "window"


STEP = Cadence(1)
EPOCH = Cadence(None)

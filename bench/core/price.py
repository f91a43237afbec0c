"""The price a report puts on a GPU-hour: one rule for every place it is typed (``bench report --price-per-hour``,
``make ... PRICE_PER_HOUR=``, ``python3 -m bench.host cloud launch --price-per-hour``). Standard library only."""

from __future__ import annotations

import math


def dollars(text: str) -> float:
    """``text`` as dollars per GPU-hour: a finite number, 0 or more (-0 read as 0: the VM's make takes no sign).
    Checked where it is typed, since the report that uses it runs after every cell (on the cloud, on a paid VM).

    Raises:
        ValueError: anything else (nan, inf, a negative number, a word), in one line naming ``text``.
    """
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < math.inf:
        raise ValueError(f"{text!r} is not a price: dollars per GPU-hour, a number 0 or more")
    return value + 0.0

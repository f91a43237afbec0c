"""The preflight's checks, one line each: the host's (``bench.host.doctor``) and each image's
(``bench.run.probe``) print and save them the same way. Standard library only.

Each check is ``ok`` (✓), ``fail`` (✗: a GPU run would be wrong or would not start), ``warn`` (!: numbers are valid
but less comparable; the fix says how) or ``info`` (·).
"""

from __future__ import annotations

import datetime as dt
import socket
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.core.atomic import write_json_atomic

MARKS = {"ok": "✓", "fail": "✗", "warn": "!", "info": "·"}


@dataclass
class Check:
    """One line of the table: what was checked, its state (ok/fail/warn/info), the value seen, and the fix."""

    name: str
    state: str
    value: str
    fix: str = ""


def table(checks: Sequence[Check]) -> str:
    """The checks as aligned text: check, mark, value, fix."""
    w = max((len(c.name) for c in checks), default=5)
    lines = [f"{'check':<{w}}     value  [fix]"]
    for c in checks:
        lines.append(f"{c.name:<{w}}  {MARKS[c.state]}  {c.value}" + (f"  [{c.fix}]" if c.fix else ""))
    return "\n".join(lines)


def save(path: Path, part: str, checks: Sequence[Check], extra: dict[str, Any] | None = None) -> None:
    """The checks as JSON with the time and host (written atomically, like every record)."""
    write_json_atomic(path, {"part": part, "utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                             "host": socket.gethostname(), "checks": [asdict(c) for c in checks], **(extra or {})})

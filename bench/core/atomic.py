"""Atomic JSON files: readers see the old file or the whole new one, never a half-written one (records, the
doctor's tables), and the check that a folder can be written at all. Standard library only."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` to ``path`` so that readers see either the old file or the whole new one.

    The JSON goes to a temporary file in the same directory, is fsynced, then renamed over ``path``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(payload, f, indent=2, sort_keys=False, default=str)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def unwritable(folder: Path) -> str | None:
    """Why this process cannot write into ``folder`` once it is made (with its parents), None when it can: a file is
    created there and removed. A command checks each folder it writes into once, before its work starts, so that a
    folder it cannot write costs one line, not a traceback after planning or measuring. An empty file needs no data
    block, so a disk whose blocks are full passes: the writes after it fail there. The folders it made for a check
    that fails are removed again: a refused command leaves nothing behind."""
    made = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=folder, prefix=".bench-write-probe-")
        os.close(fd)
        os.unlink(name)
    except OSError as e:
        for p in made:  # deepest first; one something else wrote into meanwhile is left as it is
            with contextlib.suppress(OSError):
                p.rmdir()
        return "a file of that name is in the way" if isinstance(e, FileExistsError) else e.strerror or str(e)
    return None

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


def unwritable(folder: Path, made: list[Path] | None = None) -> str | None:
    """Why this process cannot write into ``folder`` once it is made (with its parents), None when it can: a file is
    created there, renamed (``write_json_atomic`` renames every record into place: a FUSE bucket mount without
    rename fails here, not after a cell was measured) and removed. A command checks each folder it writes into
    once, before its work starts, so that a folder it cannot write costs one line, not a traceback after planning
    or measuring; every OS error counts (permission denied on a parent, a name too long, a dead FUSE or stale NFS
    mount), raised by looking at the path as much as by writing. An empty file needs no data block, so a disk whose
    blocks are full passes: the writes after it fail there. The folders this check made are removed again when it
    fails (``folder`` is resolved first, links before ``..`` as the OS does: an existing folder is never taken for a
    new one, and the folder checked is the one written); when it passes, they are added to ``made`` (deepest first)
    for a caller that removes them again if its command is refused before it writes (``bench.cli.common``)."""
    new: list[Path] = []
    name = renamed = ""
    try:
        target = Path(os.path.realpath(folder))  # the folder the OS will write: links followed before any '..'
        for p in (target, *target.parents):  # deepest first, up to the first that exists
            if p.exists():
                break
            new.append(p)
        target.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=target, prefix=".bench-write-probe-")
        os.close(fd)
        renamed = name + ".renamed"
        os.replace(name, renamed)
        os.unlink(renamed)
    except OSError as e:
        for leftover in (name, renamed):
            if leftover:
                with contextlib.suppress(OSError):
                    os.unlink(leftover)
        remove_empty(new)
        return "a file of that name is in the way" if isinstance(e, FileExistsError) else e.strerror or str(e)
    if made is not None:
        made += new
    return None


def remove_empty(folders: list[Path]) -> None:
    """Remove each of ``folders`` (deepest first) that is empty; one something was written into is left as it is."""
    for p in folders:
        with contextlib.suppress(OSError):
            p.rmdir()

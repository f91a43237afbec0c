"""One writer per run folder: an exclusive ``fcntl.flock`` on a file inside it, held for the run. Two ``bench run``
(or two ``make bench-all``) into one folder would otherwise interleave their cells, each resuming from the other's
half-written state and overwriting its records. Standard library only (the host's launcher takes it too).

The kernel drops a ``flock`` when its holder's file is closed, also when the process is killed (SIGKILL, OOM): a
lock file left behind by a dead run is an unlocked file, never a reason to refuse. Docker bind mounts share the
host's kernel, so a container's run and a host's see each other's lock on ``./results``.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from bench.core.errors import InputError

logger = logging.getLogger(__name__)

#: The lock of one ``bench run`` (``bench.run.session``): held while its cells run.
RUN_LOCK = ".bench-run.lock"
#: The lock of one ``make bench-all`` (``bench.host.launch``): held over all its rounds, whose steps each take
#: ``RUN_LOCK`` in their container (another open file: a flock on one file by two holders would refuse the second).
ALL_LOCK = ".bench-all.lock"


class FolderBusy(InputError):
    """The run folder's lock is held by another live process: one line naming it, exit code 2."""


@contextlib.contextmanager
def hold(folder: Path, name: str, what: str) -> Iterator[None]:
    """Hold an exclusive, non-blocking ``flock`` on ``folder / name`` (made with ``folder`` where missing) for the
    body, with this process's id, host and start time written into it for the refusal's line.

    The file is opened read-only and its text rewritten whole, best effort: a bucket's FUSE mount (goofys, the cloud
    job's results) takes neither appends nor rewrites in place. A file system that refuses ``flock`` itself runs the
    body unlocked, with a warning. The file stays after the body (removing it would let a third process lock a new
    file while a second still holds the old one).

    Raises:
        FolderBusy: another process holds it (``what``: the command, in the line).
        OSError: ``folder`` cannot be made or the file created.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _busy(folder, name, what, fd) from None
        except OSError as e:  # ENOLCK, EOPNOTSUPP: this file system has no flock
            logger.warning(f"{path}: not locked ({e.strerror or e}): nothing stops a second run writing here")
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with contextlib.suppress(OSError):
            path.write_text(f"pid {os.getpid()} on {socket.gethostname()}, since {since}")
        yield
    finally:
        os.close(fd)


def check_free(folder: Path, name: str, what: str) -> None:
    """Refuse early where another process holds ``folder / name`` (``hold``'s lock), before a command does work that
    ``hold`` would refuse later (``make bench-all``'s preflight and builds, before its launcher takes the lock). Makes
    and writes nothing: a missing file is a free folder, and a file system without ``flock`` is not checked. Only a
    first answer: ``hold`` is what keeps a second writer out.

    Raises:
        FolderBusy: another process holds it.
    """
    path = Path(folder) / name
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _busy(Path(folder), name, what, fd) from None
    except OSError:
        return
    finally:
        os.close(fd)  # releases the probe's own lock


def _busy(folder: Path, name: str, what: str, fd: int) -> FolderBusy:
    """The refusal's one line, naming the holder its lock file (open as ``fd``) names."""
    holder = os.read(fd, 1000).decode(errors="replace").strip() or "another process"
    return FolderBusy(f"{folder} is in use by another {what} ({holder}; lock {name}): wait for it to end, or write "
                      "this run to another folder (--out, RUN=)")


def drop_alone(folder: Path) -> None:
    """Remove ``folder``'s lock files (``RUN_LOCK``, ``ALL_LOCK``) where they are all it holds and no process holds
    them: a run refused after it took its lock and let it go (no GPU, Ctrl-C in the peak probe) leaves a folder with
    nothing else, which ``bench.cli.common.output_folder`` then removes as one it made. Each file is unlinked while
    this process holds its lock, so a live holder's (a second run that took the folder meanwhile) is never removed.
    A folder holding anything else is left as it is."""
    try:
        names = {p.name for p in Path(folder).iterdir()}
    except OSError:
        return
    if not names or not names <= {RUN_LOCK, ALL_LOCK}:
        return
    for name in names:
        try:
            fd = os.open(Path(folder) / name, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            (Path(folder) / name).unlink()
        except OSError:  # held by a live run (BlockingIOError), or no flock here: left as it is
            pass
        finally:
            os.close(fd)

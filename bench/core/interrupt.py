"""Stopping on SIGTERM and SIGINT without losing what was measured or leaving a child behind. Standard library only.

GNU ``timeout`` (a part's limit, ``window/run.sh``) sends SIGTERM to ``bench``'s process group; a cell's worker runs in
a session of its own (``bench.run.cellprocess.wait_for_worker``: its time limit kills that whole group), so it never
gets that signal, and ``bench`` must kill it. ``handling`` installs the handler for the command's whole run
(``bench.cli.main``): it kills every process group registered with ``kill_on_signal`` at once (SIGKILL), then raises
``Interrupted`` where the main thread is, unless a ``shielded`` block runs (a cell whose record is being made: the
runner writes it, then ``check`` raises). Python runs the handler in the main thread between bytecodes: a signal that
arrives while a framework's C call runs (a compile, a step; ``bench fidelity`` times in its own process) is handled
when that call returns.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

#: The signals ``handling`` turns into ``Interrupted``: ``timeout``'s and ``kill``'s default, and Ctrl-C's.
SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Interrupted(BaseException):
    """The process got ``signum`` (``SIGNALS``). A ``BaseException``, as ``KeyboardInterrupt``: an ``except
    Exception`` that turns a failure into a record or a line lets it through. ``exit_code``: 128 + the signal's
    number, as a shell reports a process the signal ended."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"interrupted by {self.name}")

    @property
    def name(self) -> str:
        """The signal's name (``SIGTERM``)."""
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def reason(signum: int, what: str) -> str:
    """The reason a record gives for work ``signum`` stopped (``what``: what was stopped, and how)."""
    how = ", as timeout(1) does at its limit" if signum == signal.SIGTERM else ""
    return f"interrupted by {signal.Signals(signum).name} (sent to bench{how}: {what})"


@dataclass
class Watch:
    """A process group ``kill_on_signal`` kills on a signal; ``signum``: the signal that killed it (None: none did)."""

    pgid: int
    signum: int | None = None


@dataclass
class _State:
    pending: int | None = None  # the first signal received while handling
    shields: int = 0  # open ``shielded`` blocks
    watched: list[Watch] = field(default_factory=list)


_state = _State()


def _handler(signum: int, frame: Any) -> None:
    """Kill every watched process group, then raise ``Interrupted`` unless a ``shielded`` block runs."""
    if _state.pending is None:
        _state.pending = signum
    for w in list(_state.watched):
        _kill(w, signum)
    if not _state.shields:
        raise Interrupted(signum)


def _kill(w: Watch, signum: int) -> None:
    w.signum = w.signum or signum
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(w.pgid, signal.SIGKILL)


@contextlib.contextmanager
def handling() -> Iterator[None]:
    """Turn ``SIGNALS`` into ``Interrupted`` (after killing the watched process groups) while the block runs; the
    previous handlers come back after it, and a signal it held (``pending``) is forgotten. Outside the main thread
    (where Python cannot set a handler) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.signal(s, _handler) for s in SIGNALS}
    _state.pending = None
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h)
        _state.pending = None  # handled: work started later in this process (a test's) is not stopped by it


def pending() -> int | None:
    """The signal received (None: none), also one a ``shielded`` block held back."""
    return _state.pending


def check() -> None:
    """Raise ``Interrupted`` for a signal a ``shielded`` block held back (nothing when none came).

    Raises:
        Interrupted: a signal came.
    """
    if _state.pending is not None:
        raise Interrupted(_state.pending)


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """While the block runs, a signal kills the watched groups and is held back (``pending``), not raised: the block
    finishes what must not be cut in two (a cell's record, from its process's end to its file), and the caller then
    calls ``check``."""
    _state.shields += 1
    try:
        yield
    finally:
        _state.shields -= 1


@contextlib.contextmanager
def kill_on_signal(pgid: int) -> Iterator[Watch]:
    """Kill process group ``pgid`` (SIGKILL) on a signal while the block runs, at once when one already came;
    the ``Watch`` yielded says whether one did (``signum``)."""
    w = Watch(pgid)
    _state.watched.append(w)
    try:
        if _state.pending is not None:
            _kill(w, _state.pending)
        yield w
    finally:
        _state.watched.remove(w)

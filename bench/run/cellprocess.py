"""A cell's worker process, seen from the runner: started in a session of its own and waited for, its whole process
group killed at the cell's time limit or when ``bench`` gets SIGTERM or SIGINT (``bench.core.interrupt``), and the
record of a worker that ended without writing its own."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.core import interrupt
from bench.instruments import profile
from bench.instruments.environment import capture, stack_pins, utc_now
from bench.results.cell import Cell
from bench.results.record import RecordError, load_record, new_record
from bench.results.schema import Env, Record
from bench.results.schema.record import Status


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])[-600:]


def wait_for_worker(args: list[str], env: dict[str, str], log_file: Path,
                    timeout_s: float) -> tuple[int, Any, bool, int | None]:
    """Run the worker command ``args`` in its own session with ``env``, its output in ``log_file``, killed (its whole
    process group) past ``timeout_s`` seconds or when this process gets SIGTERM or SIGINT
    (``bench.core.interrupt.kill_on_signal``: its own session keeps it from the signals sent to ours). Returns its exit
    code (negative: the signal), its resource usage (``os.wait4``: ``ru_maxrss`` in KiB), whether the time limit
    killed it and the signal that had it killed (None: none)."""
    timed_out = threading.Event()
    with open(log_file, "w") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

        def kill() -> None:
            timed_out.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout_s, kill)
        timer.start()
        try:
            with interrupt.kill_on_signal(proc.pid) as watch:
                _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
    return os.waitstatus_to_exitcode(status), usage, timed_out.is_set(), watch.signum

#: The note on a record whose ``env`` the runner wrote: the worker ended without a record (time limit, signal, crash).
PARENT_ENV_NOTE = ("env: captured by the runner after the cell's process ended without a record, from the cell's "
                   "environment variables and this interpreter's packages (the same image); framework_cuda is "
                   "empty: no framework ran in the runner")


def add_parent_env(rec: Record, cell: Cell, env: Mapping[str, str]) -> None:
    """Give ``rec``, a record the runner wrote for a worker that left none, the ``env`` block
    (``bench.instruments.environment.capture`` of the cell's environment ``env``, and the stack's pins) and say so
    (``PARENT_ENV_NOTE``): a cell that timed out, was killed or crashed still names the machine, image, commit,
    packages and GPU it ran on. No framework ran in the runner: ``framework_cuda`` is empty."""
    try:
        # what the runner's own interpreter may have imported (a test's) says nothing of the cell's process
        rec.env = Env.model_validate({**capture(env, frameworks=False), **stack_pins(cell.stack)})
    except Exception as e:  # the record is written whatever the capture meets
        rec.env = Env(error=f"{type(e).__name__}: {e}")
    rec.notes = [*rec.notes, PARENT_ENV_NOTE]


def worker_record(cell: Cell, worker_out: Path, rc: int, timed_out: bool, log_file: Path,
                  stopped: tuple[int | None, float] = (None, 0.0), env: Mapping[str, str] | None = None,
                  started_utc: str | None = None) -> Record:
    """The record the worker wrote (read back strictly), or when there is none the cell's record saying why: a signal
    to this process that had the worker killed (``stopped``: the signal, and the seconds the worker had run;
    ``timeout``, as a part's time limit sends it), the time limit (``timeout``), a SIGKILL (``oom``), a record the
    schema rejects (kept beside the log as ``<run_id>.rejected.json``, never deleted) or an exit without one (the
    log's tail). Such a record gets its ``env`` from the cell's environment ``env`` (default ``os.environ``;
    ``add_parent_env``), its ``started_utc`` from the runner (``started_utc``: when it started the worker's process,
    UTC ISO 8601) and its ``finished_utc`` now, the process having ended."""
    try:
        rec = load_record(worker_out)
    except RecordError as e:
        rec = Record.model_validate(new_record(cell), strict=True)
        rec.started_utc, rec.finished_utc = started_utc, utc_now()
        how = ended(cell, rc, timed_out, stopped, "; a rerun measures the cell again")
        if how is not None:
            rec.status, rec.reason = how
        elif worker_out.exists():
            kept = worker_out.with_name(f"{cell.run_id}.rejected.json")
            worker_out.replace(kept)
            rec.reason = f"the worker's record ({kept.name}) was rejected: {e}"
        else:
            rec.reason = f"worker exited with status {rc} without a record: {_tail(log_file)}"
        add_parent_env(rec, cell, os.environ if env is None else env)
        return rec
    how = ended(cell, rc, timed_out, stopped)
    cut_profile(rec, how[1] if how else f"exit status {rc}: {_tail(log_file)}")
    return rec


def ended(cell: Cell, rc: int, timed_out: bool, stopped: tuple[int | None, float],
          then: str = "") -> tuple[Status, str] | None:
    """(status, reason) of a worker that was stopped: a signal to this process (``stopped``: the signal and the
    seconds the worker had run; ``then``: what follows, said after the kill), the cell's time limit
    (``timed_out``), a SIGKILL; None for any other end."""
    signum, ran_s = stopped
    if signum is not None:
        return "timeout", interrupt.reason(signum, f"the cell's process group was killed after {ran_s:.1f} s{then}")
    if timed_out:
        return "timeout", f"exceeded the time limit of {cell.timeout_s:g} s"
    if rc == -signal.SIGKILL:
        return "oom", "killed by SIGKILL (most likely the out-of-memory killer)"
    return None


def cut_profile(rec: Record, how: str) -> None:
    """Say how the process ended in a record the worker wrote before its profile and never replaced
    (``bench.instruments.profile.UNFINISHED``): the cell's status stands (its timed numbers were measured), its
    profile's reason and the note name the end (``how``: ``ended``'s reason, or the exit status)."""
    if rec.profile is None or rec.profile.reason != profile.UNFINISHED:
        return
    rec.profile.reason = f"{profile.UNFINISHED}: {how}"
    rec.finished_utc = utc_now()  # the worker's was the early write's
    said = profile.none_note(profile.UNFINISHED)
    rec.notes = [profile.none_note(rec.profile.reason) if n == said else n for n in rec.notes]

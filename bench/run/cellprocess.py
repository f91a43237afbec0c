"""A cell's worker process, seen from the runner: started in a session of its own and waited for, its whole process
group killed at the cell's time limit or when ``bench`` gets SIGTERM or SIGINT (``bench.core.interrupt``), and the
record of a worker that ended without writing its own."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

from bench.core import interrupt
from bench.results.cell import Cell
from bench.results.record import RecordError, load_record, new_record
from bench.results.schema import Record


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


def worker_record(cell: Cell, worker_out: Path, rc: int, timed_out: bool, log_file: Path,
                  stopped: tuple[int | None, float] = (None, 0.0)) -> Record:
    """The record the worker wrote (read back strictly), or when there is none the cell's record saying why: a signal
    to this process that had the worker killed (``stopped``: the signal, and the seconds the worker had run;
    ``timeout``, as a part's time limit sends it), the time limit (``timeout``), a SIGKILL (``oom``), a record the
    schema rejects (kept beside the log as ``<run_id>.rejected.json``, never deleted) or an exit without one (the
    log's tail)."""
    try:
        return load_record(worker_out)
    except RecordError as e:
        rec = Record.model_validate(new_record(cell), strict=True)
        signum, ran_s = stopped
        if signum is not None:
            rec.status = "timeout"
            rec.reason = interrupt.reason(signum, f"the cell's process group was killed after {ran_s:.1f} s; a rerun "
                                                  "measures the cell again")
        elif timed_out:
            rec.status, rec.reason = "timeout", f"exceeded the time limit of {cell.timeout_s:g} s"
        elif rc == -signal.SIGKILL:
            rec.status = "oom"
            rec.reason = "killed by SIGKILL (most likely the out-of-memory killer)"
        elif worker_out.exists():
            kept = worker_out.with_name(f"{cell.run_id}.rejected.json")
            worker_out.replace(kept)
            rec.reason = f"the worker's record ({kept.name}) was rejected: {e}"
        else:
            rec.reason = f"worker exited with status {rc} without a record: {_tail(log_file)}"
        return rec

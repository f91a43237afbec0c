"""SIGTERM (GNU timeout's, a part's limit in window/run.sh) and SIGINT stop bench without leaving a process behind or
losing a record: the running cell's worker, in a session of its own, is killed with its whole process group, its
record says it was interrupted, the records written before it stay, no other cell starts, and bench exits 128 + the
signal's number within seconds; fidelity and selftest write what they measured. ``bench.core.interrupt``."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import types
from pathlib import Path

import pytest

from bench.core import interrupt
from bench.results.cell import Cell
from bench.results.record import read_record, result_path
from bench.run import runner
from tests.conftest import needs_torch

ROOT = Path(__file__).resolve().parents[2]

#: A worker whose ``mnist_cnn`` cell starts a grandchild (in the worker's process group), writes both pids and
#: sleeps; its other cells write an ok record at once.
SLOW = textwrap.dedent("""
    import json, os, subprocess, sys, time
    from pathlib import Path
    from bench.core.atomic import write_json_atomic
    from bench.results.cell import Cell
    from bench.results.record import new_record
    cell = Cell.from_dict(json.load(open(sys.argv[1])))
    if cell.workload == "mnist_cnn":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        Path(os.environ["PIDS_FILE"]).write_text(f"{os.getpid()} {child.pid}")
        time.sleep(120)
    rec = new_record(cell)
    rec.update(status="ok", metrics={"ms_per_step_mean": 1.0, "first_epoch_s": 0.1}, data={"source": "synthetic"})
    write_json_atomic(Path(sys.argv[2]), rec)
""")


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (an orphan's zombie waits on init, which may be slow)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid``."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(d.name))
    return found


def processes_naming(text: str) -> list[int]:
    """The live processes whose command line holds ``text`` (a run's folder: the worker's arguments name it)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                command = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                if text in command and alive(int(d.name)):
                    found.append(int(d.name))
            except OSError:
                continue
    return found


def gone_within(check, seconds: float = 5.0) -> bool:
    """Whether ``check()`` becomes falsy within ``seconds``."""
    end = time.monotonic() + seconds
    while check():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def logged(caplog: pytest.LogCaptureFixture, module: types.ModuleType) -> list[str]:
    """The lines ``module`` logged (what the CLI prints), from pytest's ``caplog``."""
    return [r.getMessage() for r in caplog.records if r.name == module.__name__]


def cell(workload: str) -> Cell:
    return Cell(stack="pytorch", suite="classic", workload=workload, task="fit", size="smoke", device="cpu",
                timeout_s=60.0)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_kills_the_cells_process_group_records_it_and_runs_no_other_cell(tmp_path, monkeypatch, caplog, sig):
    script, pids = tmp_path / "slow_worker.py", tmp_path / "pids"
    script.write_text(SLOW)
    monkeypatch.setattr(runner, "WORKER", [sys.executable, str(script)])
    monkeypatch.setenv("PIDS_FILE", str(pids))
    cells, out = [cell("mnist_mlp"), cell("mnist_cnn"), cell("cifar10_cnn")], tmp_path / "out"
    caplog.set_level(logging.INFO, logger="bench")

    def send() -> None:  # once the slow cell's worker and its child run, as timeout(1) would at its limit
        while not pids.exists():
            time.sleep(0.05)
        os.kill(os.getpid(), sig)

    threading.Thread(target=send, daemon=True).start()
    start = time.monotonic()
    with interrupt.handling(), pytest.raises(interrupt.Interrupted) as e:
        runner.run_cells(cells, out)
    assert e.value.signum == sig and e.value.exit_code == 128 + sig
    assert time.monotonic() - start < 30
    worker, child = map(int, pids.read_text().split())
    assert gone_within(lambda: alive(worker) or alive(child) or group_members(worker)), "a cell's process was left"
    first, second = (read_record(result_path(out, c)) for c in cells[:2])
    assert first["status"] == "ok"  # written before the signal: kept
    assert second["status"] == "timeout" and second["process"]["exit_code"] == -signal.SIGKILL
    assert second["reason"].startswith(f"interrupted by {signal.Signals(sig).name} (")
    assert "process group was killed" in second["reason"]
    assert not result_path(out, cells[2]).exists() and len(logged(caplog, runner)) == 2  # the third never started
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handlers are put back
    assert interrupt.pending() is None
    runner.run_cells(cells[2:], out)  # a later run in this process is not stopped by it
    assert read_record(result_path(out, cells[2]))["status"] == "ok"


def bench_run(out: Path, *prefix: str) -> subprocess.Popen:
    """``bench run`` of one slow smoke cell (a real worker: mnist_mlp on pytorch for 1000 epochs), in a session of its
    own, as window/run.sh's timeout starts it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([*prefix, sys.executable, "-m", "bench", "run", "--stack", "pytorch", "--workload",
                             "mnist_mlp", "--size", "smoke", "--device", "cpu", "--epochs", "1000", "--out", str(out)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def interrupted_record(out: Path) -> dict:
    (path,) = (out / "pytorch").glob("*.json")
    rec = json.loads(path.read_text())
    assert rec["status"] == "timeout" and rec["reason"].startswith("interrupted by SIGTERM ("), rec["reason"]
    return rec


@needs_torch
def test_sigterm_to_bench_run_kills_its_worker_records_the_cell_and_exits_at_once(tmp_path):
    out = tmp_path / "run"
    p = bench_run(out)
    try:
        assert gone_within(lambda: not processes_naming(f"bench.run.worker {out}"), 60), "no worker started"
        (worker,) = processes_naming(f"bench.run.worker {out}")
        time.sleep(0.5)
        os.killpg(p.pid, signal.SIGTERM)  # bench's group, as timeout(1) signals it; the worker is not in it
        start = time.monotonic()
        _, err = p.communicate(timeout=30)
        assert time.monotonic() - start < 5, "bench did not stop promptly"
        assert p.returncode == 128 + signal.SIGTERM, err
        assert err.strip().splitlines()[-1].startswith("bench: interrupted by SIGTERM")
        assert gone_within(lambda: alive(worker) or group_members(worker) or processes_naming(str(out)))
        interrupted_record(out)
    finally:
        for pid in processes_naming(str(out)):  # what the old code left behind: this test's own processes
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        p.kill()
        p.communicate()


@needs_torch
@pytest.mark.cover
def test_timeout_3_bench_run_leaves_no_worker_behind(tmp_path):
    out = tmp_path / "run"
    p = bench_run(out, "timeout", "3")
    try:
        p.communicate(timeout=60)
        assert p.returncode == 124  # timeout's own status: the limit fired
        assert gone_within(lambda: processes_naming(str(out))), "a worker outlived bench run"
        interrupted_record(out)  # the worker had started (bench reaches it in about a second)
    finally:
        for pid in processes_naming(str(out)):
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        p.kill()
        p.communicate()


def test_sigterm_to_bench_doctor_leaves_no_probe_running(tmp_path):
    """The doctor's probe and GEMM processes (and selftest's children) are subprocess.run children in bench's process
    group: a SIGTERM to bench alone (kill PID) used to leave them running on the GPU to their own end. Here the probe
    is a stand-in that sleeps."""
    code = textwrap.dedent("""
        import os, subprocess, sys
        from bench.run import probe
        def slow_probe(stack, timeout_s=300.0):
            subprocess.run([sys.executable, "-c", "import time; time.sleep(120)", os.environ["MARK"]])
            return []
        probe.probe_gpus = slow_probe
        from bench.cli import main
        main(["doctor", "--stack", "pytorch", "--device", "gpu"])
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MARK": "outlived-by-test"}  # only the probe's command line has it
    p = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert gone_within(lambda: not processes_naming("outlived-by-test"), 60), "the probe did not start"
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)  # its own end in seconds; a loaded machine's exit, in more
        assert p.returncode == 128 + signal.SIGTERM and "bench: interrupted by SIGTERM" in err, err
        assert gone_within(lambda: processes_naming("outlived-by-test")), "the probe outlived bench doctor"
    finally:
        for pid in processes_naming("outlived-by-test"):
            os.kill(pid, signal.SIGKILL)
        p.kill()
        p.communicate()


def test_fidelity_cut_short_writes_the_runs_that_ended(tmp_path, monkeypatch, caplog):
    from bench.run import fidelity, session

    def measure(*args, done, **kw):
        done.append({"run": "hand", "ms_per_step": 2.0})
        os.kill(os.getpid(), signal.SIGTERM)  # the part's limit, during the second run
        time.sleep(5)
        raise AssertionError("not interrupted")

    monkeypatch.setattr(fidelity, "measure", measure)
    out = tmp_path / "fidelity.json"
    caplog.set_level(logging.INFO, logger="bench")
    with interrupt.handling(), pytest.raises(interrupt.Interrupted):
        session.fidelity("pytorch", "mnist_cnn", "smoke", "cpu", 3, out)
    saved = json.loads(out.read_text())
    assert saved["runs_done"] == [{"run": "hand", "ms_per_step": 2.0}] and saved["env"]
    assert saved["interrupted"].startswith("interrupted by SIGTERM (") and "after 1 of its runs" in saved["interrupted"]
    assert logged(caplog, session)[-1].startswith(f"wrote {out}")


def test_selftest_cut_short_writes_the_checks_that_ended(tmp_path, monkeypatch):
    from bench.run.selftest import PASS, Result, run

    def child(backend, device, setting, checks, timeout_s=0):
        if setting == "on":
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        return "1.0", [Result(c, backend, 1.0, 1.0, "", 1.0, 0.1, PASS, "") for c in checks]

    monkeypatch.setattr(run, "run_child", child)
    monkeypatch.setattr(run, "installed", lambda backends: list(backends))
    out = tmp_path / "selftest.json"
    with interrupt.handling(), pytest.raises(interrupt.Interrupted):
        run.main("cpu", ["torch"], out)
    saved = json.loads(out.read_text())
    first = len(run.plan("torch", True)[0][1])  # the default child's checks, which ended before the signal
    assert [c["verdict"] for c in saved["checks"]] == ["pass"] * first + ["fail"]
    assert saved["checks"][-1]["reason"].startswith("interrupted by SIGTERM (")

"""A resumed or shared run folder: a record a rerun replaces is set aside with why, never overwritten (nor read as
this run's); a GPU resume compares the driver; the cell's aggregate is not left stale while its repeats run again;
one writer per folder (``bench.core.runlock``); a native run's default folder is not the images' one."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench.core import runlock
from bench.core.atomic import write_json_atomic
from bench.results.collect import find_records
from bench.results.record import new_record, result_path
from bench.run import plan, runfolder, runner, session
from tests.helpers.worker import bench, run_one_of

ROOT = Path(__file__).resolve().parents[2]
BASE = ["run", "--stack", "pytorch", "--workload", "mnist_mlp", "--device", "cpu"]
CELL_JSON = "pytorch__classic__mnist_mlp__fit__smoke__default.json"


def superseded(out: Path) -> dict[str, str]:
    """The records set aside under ``out`` (file name -> its ``.why.txt``)."""
    where = out / "pytorch" / "repeats" / runfolder.SUPERSEDED_DIR
    return {p.name: p.with_name(p.name[:-len(".json")] + ".why.txt").read_text()
            for p in sorted(where.glob("*.json"))} if where.is_dir() else {}


@pytest.mark.parametrize("edit, extra, why", [
    (lambda r: {**r, "env": {**r["env"], "packages": {"torch": "0.0.1-older"}}}, [],
     "made with other inputs, code, software or GPU driver: env.packages: torch '0.0.1-older'"),
    (lambda r: r, ["--force"], "--force: run again"),
    (lambda r: {**r, "status": "failed", "reason": "boom"}, [], "status failed: a cell that did not finish"),
])
def test_a_record_a_rerun_replaces_is_set_aside_with_why(tmp_path, fake_worker, edit, extra, why):
    """A resumed cell whose record was made on other software (or run again with --force, or retried after a
    failure) was written over: the earlier measurement was lost. It is kept under repeats/superseded/ with why, its
    log beside it, and the collector still finds one record of the cell, the new one."""
    out = tmp_path / "run"
    assert bench(*BASE, "--out", str(out)) == 0
    path = out / "pytorch" / CELL_JSON
    old = edit(json.loads(path.read_text()))
    old["notes"] = ["the earlier one"]
    write_json_atomic(path, old)
    bench(*BASE, "--out", str(out), *extra)
    [(name, text)] = superseded(out).items()
    kept = out / "pytorch" / "repeats" / runfolder.SUPERSEDED_DIR / name
    assert json.loads(kept.read_text()) == old and why in text
    assert kept.with_name(name[:-len(".json")] + ".log").exists()
    assert find_records(out) == [path] and "the earlier one" not in json.loads(path.read_text()).get("notes", [])


def test_a_matching_record_resumes_and_nothing_is_set_aside(tmp_path, fake_worker, capsys):
    out = tmp_path / "run"
    assert bench(*BASE, "--out", str(out)) == 0 and bench(*BASE, "--out", str(out)) == 0
    assert "already ok, skipped" in capsys.readouterr().out and superseded(out) == {}


def test_the_cells_aggregate_is_not_left_stale_while_its_repeats_run_again(tmp_path, monkeypatch):
    """Three rounds wrote the cell's record (the median of r1..r3). A resume on other code reran round 1 while the
    old aggregate stayed at the cell's path: ``bench collect`` of the folder read it as this run's cell. It is set
    aside as soon as a repeat runs again, and the new aggregate is written once every repeat is this code's."""
    monkeypatch.setattr(runfolder, "_this_software", lambda stack: {"native": True, "packages": {}, "pins": {}})
    (cell,) = plan.expand(["pytorch"], "classic", "smoke", "cpu", ["mnist_mlp"])

    def rounds(commit, which):
        monkeypatch.setattr(runfolder, "_this_commit", lambda: commit)
        monkeypatch.setattr(runner, "run_one", run_one_of(commit))
        for rnd in which:
            runner.run_cells([cell], tmp_path, repeats=3, round_=rnd, schedules={"pytorch": {"round": rnd}})

    rounds("old", (1, 2, 3))
    assert find_records(tmp_path) == [result_path(tmp_path, cell)]
    rounds("new", (1,))
    assert find_records(tmp_path) == []  # only round 1 of the new code is done: no cell yet
    assert any("while repeat 1 runs again" in why for why in superseded(tmp_path).values())
    rounds("new", (2, 3))
    [path] = find_records(tmp_path)
    assert json.loads(path.read_text())["env"]["git_commit"] == "new"
    assert len(superseded(tmp_path)) == 4  # the old aggregate and its three repeats, none lost


DRIVER = {"driver": "580.95.05", "cuda_driver": "13.0"}


@pytest.mark.parametrize("gpu_block, gpu, reused", [
    ({"uuid": "GPU-1", "driver": "570.10.01", "cuda_driver": "12.8"}, "GPU-1", False),  # the driver changed
    ({"uuid": "GPU-1", **DRIVER}, "GPU-1", True),
    ({"uuid": "GPU-1"}, "GPU-1", True),  # a record from before the driver was recorded
    ({"available": False, "reason": "NVML unavailable"}, None, True),  # a CPU record on a CPU run keeps resuming
    ({"uuid": "GPU-1", "driver": "570.10.01", "cuda_driver": "12.8"}, None, True),  # a CPU run compares no driver
])
def test_a_gpu_resume_compares_the_driver_the_record_was_measured_under(tmp_path, monkeypatch, gpu_block, gpu,
                                                                       reused):
    """A resume compared the GPU's UUID, never its driver: after a driver upgrade on the same GPU the old cells were
    reused beside new ones as one run's."""
    monkeypatch.setattr(runfolder, "_this_driver", lambda: DRIVER)
    monkeypatch.setattr(runfolder, "_this_software", lambda stack: {"native": True, "packages": {}, "pins": {}})
    (cell,) = plan.expand(["pytorch"], "classic", "smoke", "cpu", ["mnist_mlp"])
    write_json_atomic(result_path(tmp_path, cell), {**new_record(cell), "status": "ok", "env": {"gpu": gpu_block}})
    why = runfolder.RunFolder(tmp_path).mismatch(cell, gpu)
    assert (why is None) == reused, why
    if not reused:
        assert "env.gpu.driver '570.10.01', not '580.95.05'; env.gpu.cuda_driver '12.8', not '13.0'" in why


def test_the_driver_compared_is_what_a_cell_records(monkeypatch):
    """``_this_driver`` reads ``environment.gpu_info``, which writes a cell's ``env.gpu``."""
    from bench.instruments import environment

    assert runfolder.gpu_info is environment.gpu_info
    monkeypatch.setattr(runfolder, "gpu_info", lambda env=None: {"available": True, "uuid": "GPU-1", **DRIVER})
    runfolder._this_driver.cache_clear()
    try:
        assert runfolder._this_driver() == DRIVER
    finally:
        runfolder._this_driver.cache_clear()


def test_a_second_run_into_a_folder_in_use_is_one_line_and_exit_2(tmp_path, fake_worker, capsys):
    out = tmp_path / "run"
    with runlock.hold(out, runlock.RUN_LOCK, "bench run"):
        assert bench(*BASE, "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is in use by another bench run (pid " in err and "Traceback" not in err
    assert not (out / "pytorch").exists()  # nothing of the refused run was written
    assert bench(*BASE, "--out", str(out)) == 0  # once released, the folder is free


HOLD = "import sys, time; from bench.core import runlock\nwith runlock.hold(sys.argv[1], sys.argv[2], 'x'):\n" \
       "    print('held', flush=True); time.sleep(60)"


def test_a_lock_left_by_a_killed_run_does_not_block(tmp_path, fake_worker):
    out = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out), runlock.RUN_LOCK], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        os.kill(holder.pid, signal.SIGKILL)
    finally:
        holder.wait(timeout=30)
    assert (out / runlock.RUN_LOCK).exists() and bench(*BASE, "--out", str(out)) == 0


def test_a_second_make_bench_all_into_one_run_folder_is_refused(tmp_path):
    """``launch compose --run-dir`` (make bench-all) holds the run folder for all its rounds; a second one into it
    is one line and exit 2 (make then stops before collecting), whatever its steps would do."""
    run = tmp_path / "runs" / "classic-smoke-cpu"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(run), runlock.ALL_LOCK], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        argv = [sys.executable, "-m", "bench.host", "launch", "compose", "--stacks", "jax", "--rounds", "1",
                "--device", "cpu", "--make", "true", "--run-dir", str(run)]
        p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert (p.returncode, p.stderr.count("\n")) == (2, 1), p.stderr
    assert "is in use by another make bench-all" in p.stderr and "Traceback" not in p.stderr
    assert subprocess.run(argv, cwd=ROOT, capture_output=True, timeout=60).returncode == 0  # free again


def test_a_second_make_bench_all_is_refused_before_its_preflight_and_builds(tmp_path):
    """make checks the run folder's lock as it reads the Makefile (LOOP_OK's ``launch --dry-run --run-dir``): a
    second ``make bench-all`` into a folder a first one holds stops before its preflight, configure or builds (it
    had rewritten .env, doctor/host.json and retagged the images beside the first run's cells); a round's own
    ``make bench-<stack> ROUND=k``, which the holding launcher runs, is not refused; nothing is made or written."""
    run = tmp_path / "runs" / "classic-smoke-cpu"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(run), runlock.ALL_LOCK], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)

    def make_n(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["make", "-n", "--no-print-directory", *args, "DEVICE=cpu", f"RESULTS_DIR={tmp_path}",
                               f"PYTHON={sys.executable}"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    try:
        assert holder.stdout.readline().strip() == "held"
        before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
        second = make_n("bench-all")
        round_step = make_n("bench-pytorch", "ROUND=1", "REPEATS=2")
        other = make_n("bench-all", "RUN=another")
        after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert second.returncode != 0 and "is in use by another make bench-all" in second.stderr, second.stderr
    assert "doctor" not in second.stdout and "docker" not in second.stdout and "Traceback" not in second.stderr
    assert round_step.returncode == 0 and "bench run --stack pytorch" in round_step.stdout, round_step.stderr
    assert other.returncode == 0, other.stderr
    assert before == after
    assert make_n("bench-all").returncode == 0  # free again


def test_the_makefile_locks_the_run_folder_bench_all_writes():
    makefile = (ROOT / "Makefile").read_text()
    assert "$(RUN_DIR_LOCK)" in makefile.split("\nbench-all:")[1].split("\ncollect:")[0]
    assert ',--run-dir "$(RESULTS_DIR)/runs/$(RUN)")\n' in makefile


def test_a_native_run_without_out_has_its_own_folder(tmp_path, fake_worker, monkeypatch):
    """``bench run`` from a checkout wrote into results/runs/<suite>-<size>-<device>, the folder make bench-all's
    containers write by default: a native row collected among the images' (and resumed against them)."""
    monkeypatch.setenv("BENCH_RESULTS_DIR", str(tmp_path))
    monkeypatch.delenv("BENCH_IMAGE", raising=False)
    assert bench(*BASE) == 0
    runs = tmp_path / "runs"
    assert [p.relative_to(runs).parts[0] for p in find_records(runs)] == ["native-classic-smoke-cpu"]
    assert session.default_run_dir("classic", "smoke", "cpu", {"BENCH_IMAGE": "dlbench/pytorch:cpu"}) == \
        tmp_path / "runs" / "classic-smoke-cpu"


def test_a_set_aside_moves_a_profiles_folder_where_renames_are_refused_and_never_overwrites(tmp_path, monkeypatch):
    """A bucket's FUSE mount (goofys, gcsfuse) renames no non-empty folder: a profiled record's ``.tensorboard``
    beside it made ``set_aside`` raise ENOTEMPTY half-way (the record moved, the folder left, no ``.why.txt``). And a
    GPU that came back (A -> B -> A -> B) set a second record aside under the first one's name, over it."""
    (cell,) = plan.expand(["pytorch"], "classic", "smoke", "cpu", ["mnist_mlp"])
    folder = runfolder.RunFolder(tmp_path)
    path = folder.path(cell)
    real_rename = os.rename

    def fuse_rename(src, dst):
        if Path(src).is_dir() and any(Path(src).iterdir()):
            raise OSError(39, "Directory not empty")
        return real_rename(src, dst)

    monkeypatch.setattr(os, "rename", fuse_rename)
    monkeypatch.setattr(os, "replace", fuse_rename)
    kept = []
    for n in range(2):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"record {n}")
        board = path.with_name(path.stem + runfolder.TENSORBOARD)
        (board / "plugins").mkdir(parents=True)
        (board / "plugins" / "trace.xplane.pb").write_text(f"trace {n}")
        kept.append(folder._move(cell, runfolder.OTHER_GPU_DIR, "GPU-A"))
        assert not path.exists() and not board.exists()
    assert kept[0].name == f"{path.stem}.GPU-A.json" and kept[1].name.startswith(f"{path.stem}.GPU-A.")
    assert [k.read_text() for k in kept] == ["record 0", "record 1"]
    for n, k in enumerate(kept):
        moved = k.with_name(k.name.removesuffix(".json") + runfolder.TENSORBOARD)
        assert (moved / "plugins" / "trace.xplane.pb").read_text() == f"trace {n}"


def test_a_run_refused_after_it_took_its_lock_leaves_no_folder(tmp_path, fake_worker, monkeypatch):
    """The lock is taken before the run says anything; a refusal after it (no GPU for the peak probe, Ctrl-C there)
    left a folder holding only ``.bench-run.lock``, where a refused command leaves nothing it made."""
    from bench.core.errors import InputError

    def refuse(lines):
        raise InputError("refused after the lock")

    monkeypatch.setattr(session, "banner", refuse)
    out = tmp_path / "new" / "run"
    assert bench(*BASE, "--out", str(out)) != 0
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    assert bench(*BASE, "--out", str(kept)) != 0
    assert sorted(p.name for p in kept.iterdir()) == [runlock.RUN_LOCK, "notes.txt"]


def test_a_refused_run_never_removes_a_live_runs_lock(tmp_path):
    """A run that made the folder, then was refused because a second run took the lock meanwhile, removed that
    second run's lock file and the folder with it (``drop_alone`` on a refusal), so a third could lock a new file
    while the second held the old one. A lock some process holds stays; one nobody holds goes."""
    from bench.cli.common import output_folder

    folder = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(folder), runlock.RUN_LOCK], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        runlock.drop_alone(folder)
        assert (folder / runlock.RUN_LOCK).exists()
        with pytest.raises(runlock.FolderBusy), output_folder(folder, "--out"), \
                runlock.hold(folder, runlock.RUN_LOCK, "bench run"):
            pass
        assert (folder / runlock.RUN_LOCK).exists()
    finally:
        holder.kill()
        holder.wait(timeout=30)
    runlock.drop_alone(folder)
    assert not (folder / runlock.RUN_LOCK).exists()

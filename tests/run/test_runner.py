"""The runner with stand-in workers: crashes, time limits and resumed runs never lose a record."""

import os
import subprocess
import sys
import textwrap
import time

import pytest

from bench.instruments import environment, hostload, profile
from bench.results.cell import Cell
from bench.results.record import read_record, result_path
from bench.results.repeats import CONTENDED_NOTE
from bench.results.repeats import aggregate as aggregate_records
from bench.results.schema import Record
from bench.run import cellprocess, runfolder, runner
from tests.conftest import needs_torch

FAKE = textwrap.dedent("""
    import json, os, sys, time
    from bench.results.cell import Cell
    from bench.core.atomic import write_json_atomic
    from bench.results.record import new_record
    cell = Cell.from_dict(json.load(open(sys.argv[1])))
    mode = os.environ["FAKE_MODE"]
    if mode == "sleep":
        time.sleep(60)
    if mode == "pause":  # a cell that takes a second of wall time and almost no CPU
        time.sleep(1.0)
    if mode == "crash":
        print("segfault-ish", flush=True)
        sys.exit(3)
    if mode == "kill":
        os.kill(os.getpid(), 9)
    rec = new_record(cell)
    ms = 1.0 + (cell.repeat or 0)  # repeats differ, so their spread is visible
    rec.update(status="ok", metrics={"ms_per_step_mean": ms, "ms_per_step_p90": ms, "first_epoch_s": 0.1},
               data={"source": "synthetic"}, started_utc=f"2026-01-01T10:0{cell.repeat or 0}:00+00:00",
               finished_utc=f"2026-01-01T10:0{cell.repeat or 0}:30+00:00")
    caches = {k: os.environ.get(k) for k in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
    rec["settings"]["seen"] = caches  # what this process was given
    for path in filter(None, caches.values()):  # what a compile leaves behind
        os.makedirs(path, exist_ok=True)
        open(os.path.join(path, "entry"), "w").close()
    if mode.startswith("profile_"):  # the timed record, then a profile that never ends, its scratch left behind
        work = __import__("pathlib").Path(sys.argv[2]).parent
        (work / f"{cell.run_id}.profiling-x1").mkdir()
        (work / f"{cell.run_id}.trace.json.gz").write_bytes(b"cut")
        from bench.results.schema import Record
        from bench.run.worker import write_unfinished
        write_unfinished(Record.model_validate(rec), __import__("pathlib").Path(sys.argv[2]))
        if mode == "profile_kill":
            os.kill(os.getpid(), 9)
        time.sleep(60)
    if mode == "fail2" and cell.repeat == 2:
        rec.update(status="failed", reason="boom in repeat 2")
    write_json_atomic(__import__("pathlib").Path(sys.argv[2]), rec)
""")


@pytest.fixture
def fake_worker(tmp_path, monkeypatch):
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE)
    monkeypatch.setattr(runner, "WORKER", [sys.executable, str(script)])

    def set_mode(mode):
        monkeypatch.setenv("FAKE_MODE", mode)

    return set_mode



def run_one(cell, out_dir):
    """runner.run_one's record as its JSON (what it writes)."""
    return runner.run_one(cell, out_dir).model_dump(exclude_unset=True)


def aggregate(*records):
    """The aggregation of repeat records given as their JSON, as JSON."""
    return aggregate_records([Record.model_validate(r) for r in records]).model_dump(exclude_unset=True)

def cell(workload="mnist_mlp", timeout_s=30.0):
    return Cell(stack="pytorch", suite="classic", workload=workload, task="fit", size="smoke",
                device="cpu", timeout_s=timeout_s)


def test_ok_record_gets_process_info(tmp_path, fake_worker):
    fake_worker("ok")
    rec = run_one(cell(), tmp_path)
    on_disk = read_record(result_path(tmp_path, cell()))
    assert rec["status"] == on_disk["status"] == "ok"
    assert on_disk["process"]["exit_code"] == 0 and on_disk["process"]["wall_s"] > 0
    assert on_disk["process"]["max_rss_bytes"] > 0
    assert not (tmp_path / "pytorch" / ".work").exists()  # its scratch emptied, then removed


def test_a_cell_sharing_the_cpus_says_how_much_others_used_as_a_busy_process_measures_it(tmp_path, fake_worker):
    """Another process burning a CPU while a cell runs: the record's ``process.other_cpu_s`` is at least what that
    process itself used in the cell's window (psutil's count of its own CPU time, an independent reading), the cell
    is flagged (``host_contended``) and noted; the cell's own ``cpu_s`` is its process's, which slept."""
    import psutil

    fake_worker("pause")
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        own = psutil.Process(burner.pid)
        time.sleep(0.3)  # the interpreter is up and spinning
        before = sum(own.cpu_times()[:2])
        rec = run_one(cell(), tmp_path)
        burned = sum(own.cpu_times()[:2]) - before
    finally:
        burner.kill()
        burner.wait()
    process = rec["process"]
    assert burned > 0.2  # it ran, on a machine as busy as CI's (its image builds share the two cores)
    assert process["other_cpu_s"] >= 0.9 * burned - 0.05  # counted whole, within a few 10 ms ticks
    assert 0 < process["cpu_s"] < process["wall_s"]  # python's start-up and a sleep
    flagged = hostload.contended(process["other_cpu_s"], process["wall_s"], os.cpu_count())
    assert process["host_contended"] is flagged
    assert any(n.startswith(CONTENDED_NOTE) for n in rec["notes"]) is flagged
    if burned > 0.5 * process["wall_s"]:  # the burner alone kept half a CPU busy: flagged whatever else ran
        assert flagged


def test_crash_without_record_is_recorded_with_log_tail(tmp_path, fake_worker):
    fake_worker("crash")
    rec = run_one(cell(), tmp_path)
    assert rec["status"] == "failed"
    assert "status 3" in rec["reason"] and "segfault-ish" in rec["reason"]


def test_sigkill_is_recorded_as_oom(tmp_path, fake_worker):
    fake_worker("kill")
    assert run_one(cell(), tmp_path)["status"] == "oom"


def test_time_limit_kills_the_cell(tmp_path, fake_worker):
    fake_worker("sleep")
    rec = run_one(cell(timeout_s=1.0), tmp_path)
    assert rec["status"] == "timeout" and "1 s" in rec["reason"]
    assert rec["process"]["wall_s"] < 30


@pytest.mark.parametrize(("mode", "how"), [("profile_sleep", "exceeded the time limit of 5 s"),
                                         ("profile_kill", "killed by SIGKILL")])
def test_a_profile_that_never_ends_keeps_the_timed_record(tmp_path, fake_worker, mode, how):
    """The worker writes the timed record before its profile; a profile stopped by the time limit or the
    out-of-memory killer leaves that record, its status and numbers, and its profile says how it ended. (The limit
    leaves the fake worker's start room on a loaded machine: at 1 s, its start alone passed it there.)"""
    fake_worker(mode)
    rec = run_one(cell(timeout_s=5.0), tmp_path)
    assert rec["status"] == "ok" and rec["metrics"]["ms_per_step_mean"] == 1.0
    assert rec["profile"]["reason"].startswith(f"{profile.UNFINISHED}: {how}")
    assert f"profile: none ({rec['profile']['reason']})" in rec["notes"]
    assert rec["process"]["exit_code"] != 0
    assert rec["finished_utc"] != "2026-01-01T10:00:30+00:00"  # when the process ended, not the early write
    assert read_record(result_path(tmp_path, cell()))["profile"] == rec["profile"]
    assert not (tmp_path / "pytorch" / ".work").exists()  # the profiler's leftovers are gone, then the folder
    assert "profile" in runfolder.input_mismatch(Record.model_validate(rec), cell().replace(profile=True))


def test_a_profile_not_taken_for_its_length_is_not_run_again(tmp_path, fake_worker):
    from bench.results.schema import Profile

    fake_worker("ok")
    rec = runner.run_one(cell(), tmp_path)
    rec.profile = Profile(reason="not taken: its call runs 1536 steps")
    assert runfolder.input_mismatch(rec, cell().replace(profile=True)) is None
    rec.profile = None
    assert "profile None" in runfolder.input_mismatch(rec, cell().replace(profile=True))


def test_a_cell_without_a_worker_record_still_names_its_environment(tmp_path, fake_worker, monkeypatch):
    """The time limit, a signal or a crash leaves no worker record: the runner writes ``env`` from the cell's own
    environment (the stack's variables, a CPU cell's hidden GPUs), says so, and names no framework's CUDA."""
    monkeypatch.setenv("BENCH_IMAGE", "dlbench/pytorch:test")
    monkeypatch.setenv("BENCH_GIT_COMMIT", "abc123")
    # what this test process has imported is no framework of the cell's
    monkeypatch.setattr(environment, "framework_cuda", lambda: {"torch": {"cuda": "13.0", "cudnn": 91300}})
    fake_worker("sleep")
    rec = run_one(cell(timeout_s=1.0), tmp_path)
    env = rec["env"]
    assert env["native"] is False and env["image"] == "dlbench/pytorch:test" and env["git_commit"] == "abc123"
    assert env["python"] and env["packages"]["click"] and env["framework_cuda"] == {}
    assert env["env_vars"]["CUDA_VISIBLE_DEVICES"] == ""  # the cell's (a CPU cell), not this process's
    assert cellprocess.PARENT_ENV_NOTE in rec["notes"]
    assert read_record(result_path(tmp_path, cell()))["env"] == env


@pytest.mark.parametrize("mode", ["sleep", "crash", "kill"])
def test_a_killed_cell_says_its_knobs_were_asked_for_not_that_they_took_effect(tmp_path, fake_worker, mode):
    """A cell killed or crashed before its engine reported anything: its knobs are in ``settings_requested`` and
    none in ``settings`` (what took effect is unknown; the old skeleton copied the request there)."""
    fake_worker(mode)
    knobbed = cell(timeout_s=1.0).replace(variant="jit_compile=true", settings={"jit_compile": True})
    rec = run_one(knobbed, tmp_path)
    assert rec["status"] != "ok"
    assert rec["settings_requested"] == {"jit_compile": True}
    assert "jit_compile" not in rec["settings"]
    assert "jit_compile" not in read_record(result_path(tmp_path, knobbed))["settings"]


def test_a_worker_record_keeps_its_own_environment(tmp_path, fake_worker):
    fake_worker("ok")
    rec = run_one(cell(), tmp_path)
    assert cellprocess.PARENT_ENV_NOTE not in rec.get("notes", [])
    assert "python" not in rec.get("env", {})  # the stand-in worker wrote no env block: none was made up for it


def test_run_goes_on_after_a_failure_and_resumes(tmp_path, fake_worker):
    cells = [cell("mnist_mlp"), cell("mnist_cnn")]
    fake_worker("crash")
    first = runner.run_cells(cells, tmp_path)
    assert [o.status for o in first] == ["failed", "failed"]
    fake_worker("ok")
    second = runner.run_cells(cells, tmp_path)
    assert [(o.status, o.skipped) for o in second] == [("ok", False), ("ok", False)]
    fake_worker("crash")  # done cells are not run again, so the crash never happens
    third = runner.run_cells(cells, tmp_path)
    assert [(o.status, o.skipped) for o in third] == [("ok", True), ("ok", True)]
    forced = runner.run_cells(cells[:1], tmp_path, force=True)
    assert forced[0].status == "failed"



def test_each_record_on_disk_is_read_once_before_its_cell_runs(tmp_path, fake_worker, monkeypatch):
    """A run reads a cell's record on disk once for all its checks (done already? made with other inputs? from
    another GPU?); what it wrote itself it does not read back: 1 read per cell on a fresh run (its missing file
    excepted) and on a resumed one, rounds and repeats included."""
    reads: list[str] = []
    real = runfolder.load_record
    monkeypatch.setattr(runfolder, "load_record", lambda path: reads.append(path.name) or real(path))
    cells = [cell("mnist_mlp"), cell("mnist_cnn")]
    fake_worker("crash")
    runner.run_cells(cells, tmp_path)
    assert reads == []  # nothing on disk before: nothing read
    fake_worker("ok")
    runner.run_cells(cells, tmp_path)  # two failed records on disk: each read once
    assert sorted(reads) == sorted(f"{c.id}.json" for c in cells)
    reads.clear()
    runner.run_cells(cells, tmp_path)  # both done: skipped after one read each
    assert sorted(reads) == sorted(f"{c.id}.json" for c in cells)
    reads.clear()
    runner.run_cells(cells[:1], tmp_path / "r", repeats=2, round_=1,
                     schedules={"pytorch": {"seed": 1, "round": 1, "rounds": 2, "order": ["pytorch"], "position": 1}})
    assert reads == []  # a round's repeats it wrote itself are not read back

def test_cpu_cells_see_no_gpu():
    from bench.core.stacks import get_stack

    assert runner.cell_env(get_stack("keras3-jax"), "cpu")["CUDA_VISIBLE_DEVICES"] == ""
    assert runner.cell_env(get_stack("keras3-jax"), "gpu")["KERAS_BACKEND"] == "jax"


def test_repeats_run_in_separate_processes_and_aggregate_by_median(tmp_path, fake_worker):
    fake_worker("ok")
    out = runner.run_cells([cell()], tmp_path, repeats=3)
    rec = read_record(result_path(tmp_path, cell()))
    assert out[0].status == "ok" and rec["status"] == "ok"
    assert rec["metrics"]["ms_per_step_mean"] == 3.0  # median of 2, 3, 4
    block = rec["repeats"]
    assert block["n"] == 3 and block["ms_per_step_mean"]["values"] == [2.0, 3.0, 4.0]
    assert block["ms_per_step_mean"]["min"] == 2.0 and block["ms_per_step_mean"]["max"] == 4.0
    assert block["ms_per_step_mean"]["cv"] == pytest.approx(1.0 / 3.0)
    assert len(block["process_wall_s"]) == 3
    repeats = [read_record(tmp_path / "pytorch" / "repeats" / f"{cell().id}__r{k}.json") for k in (1, 2, 3)]
    # per-repeat records stay, apart from the cell record the collector reads, which lists each one's times
    assert block["started_utc"] == [r["started_utc"] for r in repeats] and None not in block["started_utc"]
    assert block["finished_utc"] == [r["finished_utc"] for r in repeats]
    assert rec["started_utc"] == repeats[0]["started_utc"]  # the cell's own: repeat 1's
    again = runner.run_cells([cell()], tmp_path, repeats=3)
    assert again[0].skipped


def test_a_failed_repeat_fails_the_cell_and_only_it_reruns(tmp_path, fake_worker):
    fake_worker("fail2")
    runner.run_cells([cell()], tmp_path, repeats=3)
    rec = read_record(result_path(tmp_path, cell()))
    assert rec["status"] == "failed" and rec["reason"] == "repeat 2 of 3: boom in repeat 2"
    r1 = tmp_path / "pytorch" / "repeats" / f"{cell().id}__r1.json"
    before = r1.stat().st_mtime_ns
    fake_worker("ok")
    runner.run_cells([cell()], tmp_path, repeats=3)
    assert read_record(result_path(tmp_path, cell()))["status"] == "ok"
    assert r1.stat().st_mtime_ns == before  # finished repeats are reused, not rerun


def test_rounds_shuffle_every_round_from_the_seed_alone():
    from bench.core import rounds

    stacks = ["keras2-tf", "keras3-tf", "keras3-jax", "keras3-torch", "pytorch"]
    orders = [rounds.order(stacks, 1, r) for r in range(1, 7)]
    assert all(sorted(o) == sorted(stacks) for o in orders)
    assert len({tuple(o) for o in orders}) > 1  # not one fixed order
    assert orders == [rounds.order(stacks, 1, r) for r in range(1, 7)]  # a resumed run recomputes the plan
    assert orders != [rounds.order(stacks, 2, r) for r in range(1, 7)]
    s = rounds.schedule("pytorch", stacks, 1, 2, 3)
    assert s["order"] == orders[1] and s["order"][s["position"] - 1] == "pytorch" and s["rounds"] == 3
    for bad in (lambda: rounds.schedule("pytorch", stacks, 1, 4, 3), lambda: rounds.schedule("x", stacks, 1, 1, 3),
                lambda: rounds.order(stacks, 1, 0), lambda: rounds.order(["a", "a"], 1, 1)):
        with pytest.raises(ValueError):
            bad()


def test_rounds_write_the_cell_record_once_every_round_ran_and_resume(tmp_path, fake_worker):
    from bench.core import rounds

    fake_worker("ok")
    stacks = ["keras3-jax", "pytorch"]
    for r in (1, 2):
        sched = {"pytorch": rounds.schedule("pytorch", stacks, 7, r, 3)}
        out = runner.run_cells([cell()], tmp_path, repeats=3, round_=r, schedules=sched)
        assert out[0].status == "ok" and not result_path(tmp_path, cell()).exists()  # 3 rounds not done yet
    r1 = tmp_path / "pytorch" / "repeats" / f"{cell().id}__r1.json"
    before = r1.stat().st_mtime_ns
    sched = {"pytorch": rounds.schedule("pytorch", stacks, 7, 1, 3)}
    runner.run_cells([cell()], tmp_path, repeats=3, round_=1, schedules=sched)
    assert r1.stat().st_mtime_ns == before  # resumed: round 1 is on disk
    sched = {"pytorch": rounds.schedule("pytorch", stacks, 7, 3, 3)}
    runner.run_cells([cell()], tmp_path, repeats=3, round_=3, schedules=sched)
    rec = read_record(result_path(tmp_path, cell()))
    assert rec["status"] == "ok" and rec["repeats"]["n"] == 3
    assert rec["repeats"]["ms_per_step_mean"]["values"] == [2.0, 3.0, 4.0]  # ordered by round
    assert [s["round"] for s in rec["repeats"]["schedule"]] == [1, 2, 3]
    assert [s["position"] for s in rec["repeats"]["schedule"]] == [
        rounds.order(stacks, 7, r).index("pytorch") + 1 for r in (1, 2, 3)]
    assert rec["schedule"]["seed"] == 7 and rec["schedule"]["round"] == 1
    again = runner.run_cells([cell()], tmp_path, repeats=3, round_=3, schedules=sched)
    assert again[0].skipped


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_a_cpu_worker_exits_without_teardown_after_its_record_and_a_gpu_one_exits_normally(tmp_path, device):
    """bench.run.worker.main: the record is on disk, then a CPU cell's process ends without the interpreter's
    teardown (no atexit handler runs); a GPU cell's exits normally (the CUDA driver's own teardown)."""
    import json
    import subprocess

    c = Cell(stack="pytorch", suite="classic", workload="mnist_mlp", task="fit", size="smoke", device=device)
    (tmp_path / "cell.json").write_text(json.dumps(c.to_dict()))
    marker, out = tmp_path / "teardown-ran", tmp_path / "out.json"
    code = textwrap.dedent(f"""
        import atexit, sys
        from bench.run import worker
        atexit.register(lambda: open({str(marker)!r}, "w").close())
        worker.run_cell = lambda cell, *args: {{"status": "ok", "device": cell.device}}
        sys.exit(worker.main([{str(tmp_path / "cell.json")!r}, {str(out)!r}]))
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(out.read_text()) == {"status": "ok", "device": device}
    assert marker.exists() == (device == "gpu")


def test_each_cell_process_gets_its_own_fresh_compile_caches_removed_after(tmp_path, fake_worker, monkeypatch):
    """Two cells of a PyTorch stack in one container: each process's inductor and Triton caches are an empty
    directory of its own (no cell compiles warm from an earlier cell's graphs), gone once the cell ended."""
    for var in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):  # inductor sets them in any process that compiled
        monkeypatch.delenv(var, raising=False)
    fake_worker("ok")
    first, second = run_one(cell("mnist_mlp"), tmp_path), run_one(cell("mnist_cnn"), tmp_path)
    seen = [first["settings"]["seen"], second["settings"]["seen"]]
    dirs = [d for s in seen for d in s.values()]
    assert all(dirs) and len(set(dirs)) == 4
    assert not any(os.path.exists(d) for d in dirs)
    assert first["settings"]["compile_cache"] == second["settings"]["compile_cache"] == "fresh per cell"
    jax = run_one(Cell(stack="keras3-jax", suite="classic", workload="mnist_mlp", task="fit", size="smoke",
                       device="cpu", timeout_s=30.0), tmp_path)
    assert jax["settings"]["seen"] == {"TORCHINDUCTOR_CACHE_DIR": None, "TRITON_CACHE_DIR": None}
    assert "compile_cache" not in jax["settings"]


def test_compile_cache_setting_names_the_inductor_switches_in_effect(tmp_path, fake_worker, monkeypatch):
    fake_worker("ok")
    monkeypatch.setenv("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "shared"))  # a caller's own: not used
    rec = run_one(cell(), tmp_path)
    assert rec["settings"]["compile_cache"] == "fresh per cell (TORCHINDUCTOR_FX_GRAPH_CACHE=0)"
    assert rec["settings"]["seen"]["TORCHINDUCTOR_CACHE_DIR"] != str(tmp_path / "shared")


COMPILE_WORKER = textwrap.dedent("""
    import json, sys
    import torch
    from torch._dynamo.utils import counters
    from bench.results.cell import Cell
    from bench.core.atomic import write_json_atomic
    from bench.results.record import new_record

    def f(x):
        return (x.sin() * 3 + x.cos()).sum()

    x = torch.randn(8, requires_grad=True)
    runs = []
    for _ in range(2):  # the second compile, after a reset, reads this process's own cache: caching is on
        torch.compile(f)(x).backward()
        runs.append({**counters["inductor"], **counters["aot_autograd"]})
        torch._dynamo.reset()
        counters.clear()
    rec = new_record(Cell.from_dict(json.load(open(sys.argv[1]))))
    rec.update(status="ok", metrics={"compiles": runs})
    write_json_atomic(__import__("pathlib").Path(sys.argv[2]), rec)
""")


@needs_torch
def test_a_second_cell_compiling_the_same_graph_does_not_hit_the_first_cells_cache(tmp_path, monkeypatch):
    """torch 2.13 on the CPU, through the runner: cell 1 compiles a function (forward and backward); cell 2,
    a fresh process compiling the same function, misses inductor's FX-graph and AOTAutograd caches, while a
    repeat compile inside cell 2 hits its own (so the caches are on, and only kept apart)."""
    from bench.models.engines.toolchain import torch_compile_blocker

    if torch_compile_blocker("cpu"):
        pytest.skip(torch_compile_blocker("cpu"))
    script = tmp_path / "compile_worker.py"
    script.write_text(COMPILE_WORKER)
    monkeypatch.setattr(runner, "WORKER", [sys.executable, str(script)])
    first = run_one(cell("mnist_mlp", timeout_s=300.0), tmp_path)
    second = run_one(cell("mnist_cnn", timeout_s=300.0), tmp_path)
    assert first["status"] == second["status"] == "ok", (first["reason"], second["reason"])
    cold, again = second["metrics"]["compiles"]
    assert cold.get("fxgraph_cache_miss", 0) >= 1 and cold.get("fxgraph_cache_hit", 0) == 0, cold
    assert cold.get("autograd_cache_miss", 0) == 1 and cold.get("autograd_cache_hit", 0) == 0, cold
    assert again.get("fxgraph_cache_hit", 0) >= 1 and again.get("autograd_cache_hit", 0) == 1, again


JIT_WORKER = textwrap.dedent("""
    import atexit, os, sys
    from pathlib import Path
    from bench.run import worker

    def driver_teardown():  # the CUDA driver writes what it JIT-compiled as the process's context goes
        if os.environ["FAKE_JIT"] == "1":
            (Path(os.environ["CUDA_CACHE_PATH"]) / "ab").mkdir(parents=True, exist_ok=True)
            (Path(os.environ["CUDA_CACHE_PATH"]) / "ab" / "kernel.bin").write_bytes(b"x" * 4096)

    atexit.register(driver_teardown)
    sys.exit(worker.main(sys.argv[1:]))  # the real worker: writes its record, then exits normally (a GPU cell)
""")


@pytest.mark.parametrize("cache, jit, expected", [(True, "1", True), (True, "0", False), (False, "1", None)])
def test_ptx_jit_is_measured_after_the_worker_process_exits(tmp_path, monkeypatch, cache, jit, expected):
    """The driver writes the CUDA JIT cache at context teardown, after the worker's record is on disk: the
    runner's reading after the process ended says whether the cell paid for PTX JIT (null without a cache)."""
    script = tmp_path / "jit_worker.py"
    script.write_text(JIT_WORKER)
    monkeypatch.setattr(runner, "WORKER", [sys.executable, str(script)])
    monkeypatch.setenv("FAKE_JIT", jit)
    if cache:
        monkeypatch.setenv("CUDA_CACHE_PATH", str(tmp_path / "cuda"))
    else:
        monkeypatch.delenv("CUDA_CACHE_PATH", raising=False)
    gpu_cell = Cell(stack="keras3-tf", suite="classic", workload="mnist_mlp", task="no-such-task", size="smoke",
                    device="gpu", timeout_s=120.0)  # unsupported at once: the record is written, then the exit
    run_one(gpu_cell, tmp_path)
    rec = read_record(result_path(tmp_path, gpu_cell))
    assert rec["status"] == "unsupported" and rec["process"]["exit_code"] == 0
    block = rec["env"]["cuda_cache"]
    sizes = {True: (0, 4096), False: (0, 0), None: (None, None)}[expected]
    assert block["jit_compiled"] is expected and (block["bytes_before"], block["bytes_after"]) == sizes
    assert any("CUDA JIT cache grew" in n for n in rec["notes"]) is bool(expected)


def test_the_jit_note_does_not_claim_the_cache_grew_only_for_a_wheels_ptx():
    """The driver's JIT cache also fills with runtime-compiled PTX (torch's NVRTC kernels, cuDNN's runtime-fused
    kernels): the note says the driver compiled code during the cell, and that its time *may* be in the first step."""
    note = runner.PTX_JIT_NOTE
    assert "runtime-compiled kernels" in note and "newer than a wheel's machine code" in note
    assert "may be inside the first epoch/step" in note and "PTX for this GPU" not in note


def test_derived_metrics_belong_to_the_aggregated_time_not_to_repeat_one():
    """B10: repeats of 10, 20 and 30 ms/step give the row 20 ms/step, and the MFU, TFLOP/s and throughput of 20 ms,
    not the 10 ms repeat's (the old aggregation copied every metric outside its median list from repeat 1)."""

    def step_rec(k, ms):
        fl, peak, batch, tokens = 2e12, 1e15, 8, 44
        rate = fl / (ms / 1000)
        m = {"ms_per_step_mean": ms, "flops_per_step": fl, "peak_flops": peak, "measured_peak_flops": peak / 2,
             "achieved_tflops": rate / 1e12, "mfu": rate / peak, "mfu_measured": rate / (peak / 2),
             "examples_per_s": 1000 * batch / ms, "tokens_per_s": 1000 * batch / ms * tokens}
        return {"status": "ok", "repeat": k, "batch_size": batch, "settings": {"generated_tokens": tokens},
                "metrics": m, "process": {"wall_s": 1.0}}

    agg = aggregate(step_rec(1, 10.0), step_rec(2, 20.0), step_rec(3, 30.0))["metrics"]
    assert agg["ms_per_step_mean"] == 20.0
    assert agg["achieved_tflops"] == pytest.approx(2e12 / 0.020 / 1e12)
    assert agg["mfu"] == pytest.approx(2e12 / 0.020 / 1e15) and agg["mfu_measured"] == pytest.approx(2 * agg["mfu"])
    assert agg["examples_per_s"] == pytest.approx(400.0) and agg["tokens_per_s"] == pytest.approx(400.0 * 44)

    def fit_rec(k, steady):
        return {"status": "ok", "repeat": k, "batch_size": 128, "data": {"n_train": 60000},
                "metrics": {"steady_epoch_s": steady, "samples_per_s": 60000 / steady, "ms_per_step_mean": steady},
                "process": {"wall_s": 1.0}}

    # two repeats: the median epoch is 2 s, so 30,000 samples/s (the median of the rates would say 40,000)
    agg = aggregate(fit_rec(1, 1.0), fit_rec(2, 3.0))
    assert agg["metrics"]["steady_epoch_s"] == 2.0 and agg["metrics"]["samples_per_s"] == pytest.approx(30000.0)
    assert agg["repeats"]["samples_per_s"]["values"] == [60000.0, 20000.0]  # the spread is kept


def test_repeats_on_two_gpus_are_not_one_measurement():
    """A cell whose rounds ran on two GPUs (a preempted spot VM resumed on another) is not aggregated into one row
    under the first GPU's UUID: it fails, naming both, and its per-repeat records stay on disk."""

    def rec(k, uuid):
        return {"status": "ok", "repeat": k, "metrics": {"ms_per_step_mean": 10.0 * k}, "process": {"wall_s": 1.0},
                "env": {"gpu": {"available": True, "uuid": uuid}}}

    agg = aggregate(rec(1, "GPU-a"), rec(2, "GPU-b"), rec(3, "GPU-b"))
    assert agg["status"] == "failed" and "GPU-a" in agg["reason"] and "GPU-b" in agg["reason"]
    assert not agg["metrics"]  # repeat 1's 10 ms/step is no median of the cell's repeats: only ok carries timings
    assert aggregate(rec(1, "GPU-a"), rec(2, "GPU-a"))["status"] == "ok"
    assert aggregate({**rec(1, None), "env": {"gpu": {"available": False}}})["status"] == "ok"  # a CPU run


@pytest.mark.parametrize("mode", ["sleep", "crash", "kill"])
def test_a_cell_without_a_worker_record_says_when_it_ran(tmp_path, fake_worker, mode):
    """The runner starts the worker and sees it end, so the record it writes for one that left none (time limit,
    crash, SIGKILL) holds those times; it held null for both."""
    fake_worker(mode)
    before = environment.utc_now()
    rec = run_one(cell(timeout_s=1.0), tmp_path)
    after = environment.utc_now()
    assert rec["status"] != "ok"
    assert before <= rec["started_utc"] <= rec["finished_utc"] <= after
    assert read_record(result_path(tmp_path, cell()))["started_utc"] == rec["started_utc"]


def test_no_empty_scratch_folder_is_left_beside_the_records_and_a_used_one_is_kept(tmp_path, fake_worker):
    """run_one's ``.work`` scratch folder (the cell and worker JSON it hands the worker) stayed empty under
    ``<run>/<stack>/`` and ``<run>/<stack>/repeats/`` after every cell; it goes once empty, never a record or log."""
    fake_worker("ok")
    runner.run_cells([cell()], tmp_path / "one")
    runner.run_cells([cell()], tmp_path / "three", repeats=3)
    assert not list(tmp_path.rglob(".work"))
    repeats = tmp_path / "three" / "pytorch" / "repeats"
    assert sorted(p.name for p in repeats.iterdir()) == sorted(
        f"{cell().id}__r{k}{ext}" for k in (1, 2, 3) for ext in (".json", ".log"))
    assert read_record(result_path(tmp_path / "one", cell()))["status"] == "ok"
    kept = tmp_path / "kept" / "pytorch" / ".work"
    kept.mkdir(parents=True)
    (kept / "left.json").write_text("{}")  # something another cell's process left: not ours to remove
    runner.run_cells([cell()], tmp_path / "kept")
    assert (kept / "left.json").read_text() == "{}"

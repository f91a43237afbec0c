"""Findings of the GPU-path read: a preempted spot VM's resume, the cooldown's idle baseline, the busy check's
PID namespace; GPU-only logic through fakes (a fake pynvml, a fake nvidia-smi)."""

import sys
import textwrap
import types

import pytest
import yaml

from bench.core.errors import InputError
from bench.host import cloud, launch
from bench.instruments import gpu_state
from bench.results.cell import Cell
from bench.results.record import read_record, result_path
from bench.run import runner
from tests.helpers.fake_nvml import GpuBetweenCells as Nvml

STUB = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    from bench.results.cell import Cell
    from bench.core.atomic import write_json_atomic
    from bench.results.record import new_record
    cell = Cell.from_dict(json.load(open(sys.argv[1])))
    rec = new_record(cell)
    rec.update(status="ok", metrics={"ms_per_step_mean": 1.0 + (cell.repeat or 0), "first_epoch_s": 0.1},
               data={"source": "synthetic"})
    rec["env"] = {"gpu": {"uuid": os.environ["STUB_GPU"]}}
    write_json_atomic(Path(sys.argv[2]), rec)
""")


def test_a_preempted_round_run_resumes_onto_one_gpu_and_records_the_rerun(tmp_path, monkeypatch):
    """3 rounds, the VM preempted after round 1 (GPU-a -> GPU-b), then the whole plan resumed: every cell ok over
    GPU-b alone, repeat 1's GPU-a record kept beside the repeats and the rerun noted."""
    script = tmp_path / "stub.py"
    script.write_text(STUB)
    monkeypatch.setattr(runner, "WORKER", [sys.executable, str(script)])
    cells = [Cell(stack="pytorch", suite="classic", workload=w, task="fit", size="smoke", device="cpu",
                  timeout_s=60) for w in ("mnist_mlp", "mnist_cnn")]
    nv = Nvml(uuid="GPU-a")
    out = tmp_path / "run"

    def bench_run(r):  # one `bench run --round r`: the GPU read once, as the CLI does
        gpu = gpu_state.gpu_uuid(nv)
        monkeypatch.setenv("STUB_GPU", gpu)
        sched = {"round": r, "position": 1, "order": ["pytorch"], "seed": 1}
        return runner.run_cells(cells, out, repeats=3, round_=r, schedules={"pytorch": sched}, gpu=gpu)

    bench_run(1)
    nv.uuid = "GPU-b"  # preempted: the managed job comes back on a new VM
    bench_run(2)
    bench_run(3)
    for r in (1, 2, 3):  # the resume: make bench-all runs every round again
        bench_run(r)
    for c in cells:
        rec = read_record(result_path(out, c))
        assert rec["status"] == "ok", rec.get("reason")
        assert rec["env"]["gpu"]["uuid"] == "GPU-b" and rec["repeats"]["n"] == 3
        assert rec["repeats"]["statuses"] == ["ok"] * 3
        assert any("GPU changed:" in n and "GPU-a" in n and "GPU-b" in n for n in rec["notes"])
        kept = out / "pytorch" / "repeats" / "other-gpu" / f"{c.id}__r1.GPU-a.json"
        assert read_record(kept)["env"]["gpu"]["uuid"] == "GPU-a"  # nothing measured is lost
        assert not any((out / "pytorch" / "repeats" / "other-gpu").glob(f"{c.id}__r[23]*"))


def test_a_finished_cell_of_another_gpu_is_measured_again_not_reused(tmp_path, monkeypatch):
    script = tmp_path / "stub.py"
    script.write_text(STUB)
    monkeypatch.setattr(runner, "WORKER", [sys.executable, str(script)])
    c = Cell(stack="pytorch", suite="classic", workload="mnist_mlp", task="fit", size="smoke", device="cpu",
             timeout_s=60)
    monkeypatch.setenv("STUB_GPU", "GPU-a")
    runner.run_cells([c], tmp_path, gpu="GPU-a")
    monkeypatch.setenv("STUB_GPU", "GPU-b")
    [o] = runner.run_cells([c], tmp_path, gpu="GPU-b")
    assert not o.skipped and o.record.env.gpu.uuid == "GPU-b"
    assert (tmp_path / "pytorch" / "repeats" / "other-gpu" / f"{c.id}.GPU-a.json").exists()
    assert (tmp_path / "pytorch" / "repeats" / "other-gpu" / f"{c.id}.GPU-a.log").exists()  # its log goes with it


def test_every_stack_cools_to_the_baseline_read_before_the_first_stack():
    """A run with a cooldown (COOLDOWN=600): the host reads the idle temperature once (fake nvidia-smi) and every
    step gets it; a stack's cooldown then waits for that baseline, not for the hot temperature its own start reads."""
    asked = []

    def smi(cmd):
        asked.append(cmd)
        return "38, GPU-a\n"

    calls = []
    steps = launch.plan(["jax", "pytorch"], 2)
    launch.Compose(run=lambda cmd: calls.append(cmd) or 0, read_idle=lambda: launch.idle_temperature(smi),
                   cooldown_s=600).launch(steps, ["jax", "pytorch"])
    assert len(asked) == 1 and asked[0] == launch.IDLE_QUERY
    assert len(calls) == 4 and all("IDLE_TEMP_C=38" in c for c in calls)
    # the second stack's bench run starts with the GPU at 70 °C (the first stack just heated it)
    clock = types.SimpleNamespace(t=0.0)
    nv = Nvml(temps=(70, 70, 60, 45, 40))
    cd = gpu_state.Cooldown(600, nv=nv, sleep=lambda s: setattr(clock, "t", clock.t + s), clock=lambda: clock.t,
                            idle_c=38.0, idle_source="host nvidia-smi before the first stack")
    block = cd.wait()
    assert block["idle_c"] == 38 and block["target_c"] == 41 and block["start_c"] == 70
    assert block["end_c"] == 40 and block["reached"] is True and block["waited_s"] > 0
    assert block["idle_source"] == "host nvidia-smi before the first stack"
    assert launch.idle_temperature(lambda cmd: None) is None


def test_a_bench_run_given_the_baseline_cools_to_it_not_to_its_own_hot_start(monkeypatch):
    """The CLI's cooldown for the second stack: the GPU reads 70 °C as its bench run starts (the first stack just
    heated it); given --idle-temp-c 38 the target is 41 °C and the record says where 38 came from."""
    from bench.core.request import Request
    from bench.run import session

    monkeypatch.setattr(gpu_state, "snapshot", lambda nv=None, _f=gpu_state.snapshot: _f(Nvml(temps=(70,))))
    given = session.cooldown_for(Request(cooldown_s=60, idle_temp_c=38.0), "gpu")
    assert given is not None and given.idle_c == 38.0 and given.idle_source == session.IDLE_GIVEN
    own = session.cooldown_for(Request(cooldown_s=60), "gpu")  # without it: the hot start, and the record says so
    assert own is not None and own.idle_c == 70.0 and "as this bench run started" in own.idle_source
    with pytest.raises(InputError, match="waits for the GPU to cool, and this run is on the CPU"):
        session.cooldown_for(Request(cooldown_s=60, idle_temp_c=38.0), "cpu")  # no GPU to wait for: refused
    assert session.cooldown_for(Request(cooldown_s=0), "cpu") is None


def test_the_busy_check_sees_the_hosts_processes_and_says_so(monkeypatch, tmp_path):
    with open("compose.yaml") as f:
        compose = yaml.safe_load(f)
    benches = {k: v for k, v in compose["services"].items() if k != "collector"}
    assert benches and all(v.get("pid") == "host" for v in benches.values())
    job = cloud.k8s_job("classic", ["pytorch"], "reg.example", "NVIDIA-H100-80GB-HBM3")
    assert job["spec"]["template"]["spec"]["hostPID"] is True
    monkeypatch.setattr(gpu_state, "Path", lambda p: tmp_path / "comm")
    (tmp_path / "comm").write_text("systemd\n")
    assert gpu_state.snapshot(Nvml())["seen_from"] == "host pid namespace"
    (tmp_path / "comm").write_text("bench\n")
    assert gpu_state.snapshot(Nvml())["seen_from"] == "container pid namespace"


def test_an_idle_temperature_without_a_cooldown_is_said_to_be_unused(caplog):
    """``IDLE_TEMP_C`` (which ``make bench-all`` passes on every GPU host) without ``COOLDOWN`` was taken and dropped,
    unsaid: the run's log now says it is not used, and the run goes on (no cooldown, nothing refused)."""
    import logging

    from bench.core.request import Request
    from bench.run import session

    with caplog.at_level(logging.INFO, logger=session.logger.name):
        assert session.cooldown_for(Request(idle_temp_c=38.0), "gpu") is None
        assert session.cooldown_for(Request(), "gpu") is None
    said = [r.getMessage() for r in caplog.records]
    assert said == ["--idle-temp-c 38 (IDLE_TEMP_C) not used: it is the cooldown's baseline, and no --cooldown "
                    "(COOLDOWN) is set, so no cell waits for the GPU to cool"], said

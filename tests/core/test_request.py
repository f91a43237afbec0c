"""One request: every input of bench run/sweep declared once with its default (bench.core.request), the CLI options
generated from it, and the host side (Makefile, SkyPilot task, Kubernetes Job) passing on only what the user set."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
import yaml

from bench.cli import running
from bench.core import request
from bench.core.request import Request
from bench.host import cloud
from tests.helpers.cloud_vm import INSTALLABLE, RUN, VM
from tests.helpers.worker import bench

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


@pytest.mark.parametrize("command, cmd", [("run", running.run_cmd), ("sweep", running.sweep_cmd)])
def test_every_option_of_run_and_sweep_is_a_request_field_with_its_default(command, cmd):
    params = {p.name: p for p in cmd.params if isinstance(p, click.Option)}
    fields = {f.name: f for f in Request.options(command)}
    assert set(params) == set(fields)
    for name, f in fields.items():
        if not f.metadata["multiple"]:  # a repeatable option's default is click's "unset": the empty tuple
            assert params[name].default == f.default, name
        assert params[name].envvar == f.metadata["env"] and params[name].help == f.metadata["help"], name


def test_existing_flags_and_environment_variables_keep_working():
    flags = {o for p in running.run_cmd.params for o in p.opts}
    assert {"--stack", "--out", "--timeout", "--cooldown", "--set", "--compile", "--no-augment", "--round",
            "--batch-size", "--seq-len", "--telemetry-samples"} <= flags
    envs = {p.envvar for p in running.run_cmd.params}
    assert {"BENCH_STACK", "BENCH_DEVICE", "BENCH_REPEATS", "BENCH_SYNC", "BENCH_SET", "BENCH_DATA",
            "BENCH_COOLDOWN"} <= envs


def test_bench_set_from_the_environment_names_the_variant(tmp_path, fake_worker, monkeypatch, capsys):
    monkeypatch.setenv("BENCH_SET", "tf32=off")
    monkeypatch.setenv("BENCH_REPEATS", "2")
    out = tmp_path / "run"
    assert bench("run", "--stack", "pytorch", "--workload", "mnist_mlp", "--device", "cpu", "--out", str(out)) == 0
    [rec] = [json.loads(p.read_text()) for p in (out / "pytorch").glob("*.json")]
    assert rec["cell_id"] == "pytorch__classic__mnist_mlp__fit__smoke__tf32=off" and rec["repeats"]["n"] == 2


def helper(*args: str) -> str:
    p = subprocess.run([PY, "-m", "bench.host", "request", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def test_the_host_reads_each_default_from_the_request():
    assert helper("default", "repeats", "--device", "gpu") == str(request.REPEATS["gpu"]) == "3"
    assert helper("default", "repeats", "--device", "cpu") == "1"
    assert helper("default", "size", "--device", "gpu") == "full"
    assert helper("default", "suite") == Request().suite == "classic"
    assert helper("default", "seed") == "1"
    assert helper("default", "timeout_s", "--size", "full") == "3600"
    p = subprocess.run([PY, "-m", "bench.host", "request", "default", "repeats"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "depends on the device" in p.stderr and "Traceback" not in p.stderr


def test_makefile_variables_pass_through_as_bench_run_arguments():
    assert request.run_args({"SET": "tf32=off jit_compile=true", "BATCH_SIZE": "64", "NO_AUGMENT": "1",
                             "SYNC": ""}) == ["--batch-size", "64", "--set", "tf32=off", "--set", "jit_compile=true",
                                              "--no-augment"]
    assert helper("args", "TIMEOUT=30", "WORKLOADS=mnist_mlp mnist_cnn") == \
        "--workload mnist_mlp --workload mnist_cnn --timeout 30"
    with pytest.raises(ValueError, match="not a pass-through input"):
        request.run_args({"DEVICE": "gpu"})  # the Makefile resolves the device itself


@pytest.mark.parametrize("pair, says", [
    ("DATA=bogus", "DATA: 'bogus' is none of auto, real, synthetic"),
    ("COMPILE=fast", "COMPILE: 'fast' is none of default, reduce-overhead, max-autotune"),
    ("BATCH_SIZE=0", "BATCH_SIZE: 0 is not at least 1"), ("SAMPLES=2.5", "SAMPLES: '2.5' is not an integer"),
    ("TIMEOUT=0", "TIMEOUT: 0 is not above 0"), ("COOLDOWN=soon", "COOLDOWN: 'soon' is not a number")])
def test_the_host_refuses_a_value_bench_runs_option_would_refuse_in_one_line(pair, says):
    """Choices, integers, numbers and their minimums as ``bench run``'s click options check them in the image:
    refused on the host first, one line and exit 2; what the option takes passes on as it is."""
    p = subprocess.run([PY, "-m", "bench.host", "request", "args", pair], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert (p.returncode, p.stdout) == (2, "") and p.stderr.count("\n") == 1 and says in p.stderr, p.stderr
    assert request.run_args({"DATA": "real", "COMPILE": "max-autotune", "BATCH_SIZE": "64", "TIMEOUT": "0.5",
                             "COOLDOWN": "0"}) == ["--batch-size", "64", "--timeout", "0.5", "--data", "real",
                                                   "--cooldown", "0", "--compile", "max-autotune"]

@pytest.mark.parametrize("value, says", [
    ("tf32=bogus", "SET: tf32=bogus is not valid; expected 'default', 'on', 'off'"),
    ("tf32=off bogus=1", "SET: unknown knob 'bogus'; known: "), ("tf32", "SET: 'tf32': expected KNOB=VALUE")])
def test_the_host_refuses_a_knob_bench_run_would_refuse_in_one_line(value, says):
    """The host checks SET against the knobs' registry (bench.core.knobs, standard library only): one line, exit 2,
    and make stops before any container runs."""
    p = subprocess.run([PY, "-m", "bench.host", "request", "args", f"SET={value}"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert (p.returncode, p.stdout) == (2, "") and p.stderr.count("\n") == 1 and says in p.stderr
    m = subprocess.run(["make", "-n", "--no-print-directory", "bench-pytorch", "DEVICE=cpu", f"SET={value}",
                        f"PYTHON={PY}"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert m.returncode != 0 and says in m.stderr and "Traceback" not in m.stderr and "bench run" not in m.stdout



def test_the_host_refuses_a_workload_no_folder_registers_in_one_line():
    """WORKLOADS is checked on the host against the workload folders' names (bench.core.workloadnames, read from
    their spec.py without importing them): one line naming it and the known ones, exit 2, and make check-request
    stops; it passed as --workload nope and failed only inside a container, after the images were built."""
    from bench.models.workloads import WORKLOADS

    p = subprocess.run([PY, "-m", "bench.host", "request", "args", "WORKLOADS=mnist_cnn nope"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    says = f"WORKLOADS: unknown workload 'nope'; known: {', '.join(WORKLOADS)}"
    assert (p.returncode, p.stdout) == (2, "") and p.stderr.count("\n") == 1 and says in p.stderr, p.stderr
    m = subprocess.run(["make", "--no-print-directory", "check-request", "WORKLOADS=nope", f"PYTHON={PY}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert m.returncode != 0 and says in m.stderr and "Traceback" not in m.stderr
    ok = subprocess.run(["make", "--no-print-directory", "check-request", "WORKLOADS=mnist_cnn", f"PYTHON={PY}"],
                        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert request.run_args({"WORKLOADS": " ".join(WORKLOADS)}) == [w for n in WORKLOADS for w in ("--workload", n)]


def test_the_hosts_workload_check_imports_no_numpy_and_no_registry():
    code = ("import sys; from bench.core.request import Request; from bench.core.workloadnames import check_workload; "
            "check_workload('bert'); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('numpy', 'pydantic', 'click') "
            "or m.startswith('bench.models')]; print(bad); sys.exit(bool(bad))")
    p = subprocess.run([PY, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_the_workload_option_is_checked_by_the_workload_names_own_check():
    """``request.check_workload`` only wrapped ``workloadnames.check_workload`` (a lazy import of a standard-library
    module): the option names the one check itself."""
    from bench.core import workloadnames

    [workloads] = [f for f in dataclasses.fields(Request) if f.name == "workloads"]
    assert workloads.metadata["check"] is workloadnames.check_workload


def test_bench_all_stops_on_a_bad_input_before_its_preflight_or_any_build():
    """``make bench-all`` checks the inputs first (``check-request``): a bad knob costs no preflight and no image
    build, only its one line."""
    m = subprocess.run(["make", "-n", "--no-print-directory", "bench-all", "DEVICE=cpu", "SET=tf32=bogus",
                        f"PYTHON={PY}"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert m.returncode != 0 and "SET: tf32=bogus is not valid" in m.stderr and "Traceback" not in m.stderr
    assert "doctor host" not in m.stdout and "docker" not in m.stdout, m.stdout

def make_n(*args: str) -> str:
    p = subprocess.run(["make", "-n", "--no-print-directory", *args, f"PYTHON={PY}"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return " ".join(p.stdout.split())


def test_make_passes_only_what_the_user_set_and_the_rest_from_the_request():
    bare = make_n("bench-pytorch", "DEVICE=cpu")
    assert "--suite classic --size smoke --device cpu" in bare
    for flag in ("--timeout", "--set", "--sync", "--data", "--batch-size", "--repeats"):
        assert flag not in bare
    set_ = make_n("bench-pytorch", "DEVICE=cpu", "BATCH_SIZE=64", "EPOCHS=5", "SET=tf32=off", "DATA=synthetic")
    assert "--batch-size 64 --epochs 5 --data synthetic --set tf32=off" in set_
    rounds = make_n("bench-pytorch", "DEVICE=cpu", "ROUND=1")
    assert f"--repeats {request.REPEATS['cpu']} --seed {request.DEFAULT_SEED}" in rounds


def test_the_cloud_passes_the_users_inputs_to_the_vm_and_the_job():
    [cmd] = cloud.launch_commands("classic", ["H100"], ["pytorch"], "full", 3, "b", "r",
                                  inputs={"SET": "tf32=off", "BATCH_SIZE": "64", "SYNC": ""})
    envs = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--env"]
    assert "SET=tf32=off" in envs and "BATCH_SIZE=64" in envs and "PASS_VARS=SET BATCH_SIZE" in envs
    assert not any(e.startswith("SYNC=") for e in envs)
    with pytest.raises(ValueError, match="not a pass-through input"):
        cloud.launch_commands("classic", ["H100"], ["pytorch"], "full", 3, "b", "r", inputs={"PATH": "/x"})
    job = cloud.k8s_job("classic", ["pytorch"], "ghcr.io/o/dlbench", "NVIDIA-H100-80GB-HBM3",
                        inputs={"SET": "tf32=off", "EPOCHS": "5"})
    [init] = job["spec"]["template"]["spec"]["initContainers"][:1]
    assert init["args"][-4:] == ["--epochs", "5", "--set", "tf32=off"]
    assert "--size" in init["args"] and init["args"][init["args"].index("--size") + 1] == "full"
    assert len(job["spec"]["template"]["spec"]["initContainers"]) == request.REPEATS["gpu"]


def test_make_cloud_passes_the_users_inputs():
    out = make_n("cloud", "GPUS=H100", "BUCKET=b", "CLOUD_RUN=r", "DRY_RUN=1", "SET=tf32=off", "BATCH_SIZE=64")
    assert "--input 'BATCH_SIZE=64' --input 'SET=tf32=off'" in out


def test_the_task_spec_restates_no_default():
    envs = yaml.safe_load((ROOT / cloud.TASK_YAML).read_text())["envs"]
    assert all(envs[k] == "" for k in ("SUITE", "STACKS", "SIZE", "REPEATS", "SEED", "PASS_VARS"))


def test_run_sh_hands_make_only_the_set_inputs(tmp_path):
    vm = VM(tmp_path, installed=tuple(INSTALLABLE), state=("docker-group",))
    p = vm.run(RUN, str(tmp_path / "bucket"), RUN_NAME="r", SUITE="paper", SIZE="", PASS_VARS="SET BATCH_SIZE",
               SET="tf32=off jit_compile=true", BATCH_SIZE="64")
    assert p.returncode == 0, p.stderr
    [bench_all] = [c for c in vm.calls() if c.startswith("make bench-all")]
    assert bench_all.startswith("make bench-all DEVICE=gpu SUITE=paper SET=tf32=off jit_compile=true BATCH_SIZE=64 "
                                "RESULTS_DIR=")
    assert not any(w.startswith(("SIZE=", "REPEATS=", "STACKS=", "SEED=")) for w in bench_all.split())
    bad = vm.run(RUN, str(tmp_path / "bucket"), RUN_NAME="r", PASS_VARS="X;rm")
    assert bad.returncode == 2 and "not a variable name" in bad.stderr


def test_request_is_frozen_and_standard_library_only():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Request().suite = "paper"  # type: ignore[misc]
    code = ("import sys, bench.core.request; bad = [m for m in sys.modules if m.split('.')[0] in "
            "('click', 'torch', 'numpy', 'yaml') or (m.startswith('bench.') and not m.startswith('bench.core'))]; "
            "print(bad); sys.exit(bool(bad))")
    assert subprocess.run([PY, "-c", code], cwd=ROOT, capture_output=True, timeout=60).returncode == 0


@pytest.mark.parametrize("pairs, says", [
    (["SUITE=classik"], "SUITE: unknown suite 'classik'; known: classic, tuning, paper"),
    (["SUITE="], "SUITE is empty"),
    (["SIZE=huge"], "SIZE: 'huge' is none of auto, smoke, full"),
    (["REPEATS=0"], "REPEATS: 0 is not at least 1"),
    (["REPEATS=-1"], "REPEATS: -1 is not at least 1"),
    (["SEED=x"], "SEED: 'x' is not an integer"),
    (["ORDER=zigzag"], "ORDER: 'zigzag' is none of shuffled, abba"),
    (["ORDER=abba"], "the abba order takes two stacks, got 6"),
    (["STACKS=pytorch pytorch"], "a stack is named twice"),
])
def test_bench_all_stops_on_a_bad_loop_variable_before_its_preflight_or_any_build(pairs, says):
    """SUITE, SIZE, REPEATS, SEED and ORDER shape make's own loop, so request args never saw them: a bad one reached
    launch (after the preflight and every image build) or each stack's container (SUITE, SIZE: every stack failed in
    turn, then collect ran). check-request now stops make on one line first."""
    m = subprocess.run(["make", "-n", "--no-print-directory", "bench-all", "DEVICE=cpu", *pairs, f"PYTHON={PY}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert m.returncode != 0 and says in m.stderr and "Traceback" not in m.stderr, m.stderr
    assert "doctor host" not in m.stdout and "docker" not in m.stdout, m.stdout


def test_request_check_takes_the_loop_variables_and_the_registrys_suites():
    from typing import get_args

    from bench.core.words import Suite
    from bench.models.workloads import SUITES

    assert tuple(SUITES) == get_args(Suite)
    for suite in SUITES:
        request.check_loop({"SUITE": suite, "SIZE": "auto", "REPEATS": "2", "SEED": "-3", "ORDER": "abba"})
    with pytest.raises(ValueError, match="not a loop variable: STACKS"):
        request.check_loop({"STACKS": "pytorch"})
    assert not set(request.LOOP_VARS) & set(request.make_vars())
    ok = subprocess.run(["make", "-n", "--no-print-directory", "bench-all", "DEVICE=cpu", "SUITE=paper", "REPEATS=2",
                         "ORDER=abba", "STACKS=pytorch jax", f"PYTHON={PY}"], cwd=ROOT, capture_output=True, text=True,
                        timeout=120)
    assert ok.returncode == 0 and "doctor host" in ok.stdout, ok.stderr

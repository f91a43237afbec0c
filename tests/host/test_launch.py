"""The one host-side loop of rounds x stacks (bench.host.launch) and its launchers: compose runs it on this host,
the Kubernetes Job writes it as init containers, in the same order with the same round arguments."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.core import rounds
from bench.host import cloud, launch

ROOT = Path(__file__).resolve().parents[2]
STACKS = ["keras2-tf", "keras3-jax", "pytorch"]


def test_the_plan_is_every_stack_once_per_round_in_each_rounds_shuffled_order():
    steps = launch.plan(STACKS, 3, seed=7)
    assert [s.stack for s in steps] == [x for r in (1, 2, 3) for x in rounds.order(STACKS, 7, r)]
    assert [s.round for s in steps] == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert steps[4].bench_args(STACKS) == ["--round", "2", "--repeats", "3", "--seed", "7", "--round-stacks",
                                           "keras2-tf keras3-jax pytorch"]
    with pytest.raises(ValueError):
        launch.plan(STACKS, 0)
    with pytest.raises(ValueError):
        launch.plan([], 1)


def test_a_dry_run_checks_the_plan_prints_each_rounds_order_and_runs_nothing(capsys):
    from bench.host import __main__ as front_door

    argv = ["launch", "compose", "--stacks", " ".join(STACKS), "--rounds", "2", "--seed", "7", "--make", "false"]
    assert front_door.main([*argv, "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"round {r} of 2: {' '.join(rounds.order(STACKS, 7, r))}" for r in (1, 2)]
    with pytest.raises(SystemExit) as e:
        front_door.main([*argv, "--order", "abba", "--dry-run"])
    assert e.value.code == 2 and "the abba order takes two stacks" in capsys.readouterr().err


@pytest.mark.parametrize("stacks, says", [("jax foo", "unknown stack(s) foo; known: keras2-tf"),
                                          ("jax jax", "a stack is named twice")])
def test_a_dry_run_refuses_a_stack_no_run_could_have(stacks, says, capsys):
    """``launch compose --dry-run`` (make check-request's check of the rounds) printed a plan of stacks that are
    none: ``round 1 of 1: foo bar``, exit 0; the launcher then ran ``make bench-foo``."""
    from bench.host import __main__ as front_door

    with pytest.raises(SystemExit) as e:
        front_door.main(["launch", "compose", "--stacks", stacks, "--rounds", "1", "--dry-run"])
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == "" and err.count("\n") == 1 and says in err, err


def test_compose_runs_each_step_through_make_and_goes_on_past_a_failed_stack(capsys):
    ran = []

    def run(cmd):
        ran.append(cmd)
        return 1 if cmd[2] == "bench-keras3-jax" else 0

    failed = launch.Compose("make", run, read_idle=lambda: None).launch(launch.plan(STACKS, 2, seed=1), STACKS)
    assert [c[2:] for c in ran] == [[f"bench-{s.stack}", f"ROUND={s.round}"] for s in launch.plan(STACKS, 2, 1)]
    assert failed == ["keras3-jax(round 1)", "keras3-jax(round 2)"]
    assert capsys.readouterr().out.count("== round") == 2


#: A stand-in for ``make bench-<stack>``: on SIGINT it takes a second to clean up (compose stopping the container),
#: then leaves a mark and exits 130; argv[1] is the folder of its marks.
SLOW_TO_STOP = """
import pathlib, signal, sys, time
marks = pathlib.Path(sys.argv[1])
def stop(*_):
    time.sleep(1.0)
    (marks / "stopped").write_text("")
    sys.exit(130)
signal.signal(signal.SIGINT, stop)
(marks / "started").write_text("")
time.sleep(60)
"""


def test_ctrl_c_waits_for_the_running_stack_and_says_so_in_one_line(tmp_path):
    """Ctrl-C during ``make bench-all`` (SIGINT to the whole foreground group) printed the launcher's traceback and
    killed the running ``make bench-<stack>`` 0.25 s after the signal, so the prompt came back while compose was
    still stopping the container. Now the launcher waits for it, prints one line and exits 130."""
    make = tmp_path / "make"
    make.write_text(f"#!/bin/sh\nexec {sys.executable} -c '{SLOW_TO_STOP}' {tmp_path}\n")
    make.chmod(0o755)
    launcher = subprocess.Popen(
        [sys.executable, "-m", "bench.host", "launch", "compose", "--stacks", "pytorch jax", "--rounds", "1",
         "--make", str(make)], cwd=ROOT, env={**os.environ, "IDLE_TEMP_C": "40"}, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 30
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(launcher.pid, signal.SIGINT)  # the terminal's Ctrl-C: the launcher and its child alike
    err = launcher.communicate(timeout=30)[1]
    assert launcher.returncode == 130 and "Traceback" not in err, err
    assert err.strip().startswith("interrupted (Ctrl-C)") and len(err.strip().splitlines()) == 1, err
    assert "CSV and report were not rewritten" in err  # a results/<RUN>.csv from before looked like this run's
    assert (tmp_path / "stopped").exists()  # the stack's make ended its cleanup before the launcher returned


def test_the_kubernetes_job_runs_the_same_plan_as_compose():
    job = cloud.k8s_job("classic", STACKS, "ghcr.io/x/dlbench", "NVIDIA-A100-SXM4-80GB", repeats=2, seed=5)
    init = job["spec"]["template"]["spec"]["initContainers"]
    steps = launch.plan(STACKS, 2, seed=5)
    assert [c["name"] for c in init] == [f"r{s.round}-{s.stack}" for s in steps]
    for c, s in zip(init, steps, strict=True):
        assert c["args"][-8:] == s.bench_args(STACKS)


def test_make_bench_all_uses_the_launcher_not_a_loop_of_its_own():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nbench-all:", 1)[1].split("\n\n", 1)[0]
    assert "$(HOST_CLI) launch compose" in recipe and "for r in" not in recipe
    assert "\nHOST_CLI := $(PYTHON) -m bench.host\n" in makefile


@pytest.mark.parametrize("dry", [[], ["--dry-run"]])
def test_a_make_that_is_no_program_is_one_line_and_exit_2(dry):
    """``launch compose --make <missing>`` ended in a FileNotFoundError traceback from the first step's Popen."""
    p = subprocess.run([sys.executable, "-m", "bench.host", "launch", "compose", "--stacks", "jax", "--rounds", "1",
                        "--device", "cpu", "--make", "/nonexistent/make", *dry], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert (p.returncode, p.stdout, p.stderr.count("\n")) == (2, "", 1), p.stderr
    assert "--make '/nonexistent/make': no such program" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("cooldown", [None, 0.0, 60.0])
def test_the_idle_temperature_is_read_and_passed_only_for_a_cooldown(cooldown, capsys, monkeypatch):
    """The idle temperature is the cooldown's baseline (docs/running.md: "GPU, with COOLDOWN"): bench-all's launcher
    read it, printed it and passed IDLE_TEMP_C to every stack of any GPU run, whose bench run then said it was not
    used. Now only a run with a cooldown (COOLDOWN > 0, the Makefile's --cooldown) reads it."""
    monkeypatch.delenv("IDLE_TEMP_C", raising=False)
    ran: list[list[str]] = []
    read: list[bool] = []
    launch.Compose("make", lambda cmd: ran.append(cmd) or 0, read_idle=lambda: read.append(True) or 41.0,
                   device="gpu", cooldown_s=cooldown).launch(launch.plan(["jax"], 1), ["jax"])
    used = bool(cooldown)
    assert [c[3:] for c in ran] == [["ROUND=1", *(["IDLE_TEMP_C=41"] if used else [])]]
    assert read == ([True] if used else [])
    assert ("idle GPU temperature" in capsys.readouterr().out) == used
    recipe = (ROOT / "Makefile").read_text().split("\nbench-all:", 1)[1].split("\n\n", 1)[0]
    assert "$(if $(COOLDOWN),--cooldown $(call shq,$(COOLDOWN)))" in recipe
